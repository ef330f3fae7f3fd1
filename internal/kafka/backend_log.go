package kafka

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/magnetar-io/magnetar/internal/resources"
	"github.com/magnetar-io/magnetar/internal/topics"
	"github.com/magnetar-io/magnetar/internal/txn"
	"github.com/magnetar-io/magnetar/internal/wire"
)

// topicLog is one partition's Log on the topic service: appends through one producer of
// the topic, reads through a few cached readers, offsets from the entries' indexes.
//
// A Fetch usually continues where the previous one of its consumer stopped, so each reader
// remembers the offset its next entry starts at (and the entries it read beyond what the
// Fetch could take); a read at another offset takes the least recently used reader and
// moves it with a bounded search (Topic.SearchIndex).
type topicLog struct {
	be   *TopicsBackend
	t    *topics.Topic
	p    *topics.Producer
	seq  atomic.Int64
	dead atomic.Bool // the topic closed the producer (unload, deletion): reopen

	mu      sync.Mutex
	readers [logReaders]*logReader
	// start is the DeleteRecords mark (resources.KafkaLogStart) while it still applies.
	start resources.KafkaLogStart
}

// logReaders is how many readers a partition keeps (consumers at different offsets).
const logReaders = 4

type logReader struct {
	busy    bool
	r       *topics.Reader
	next    int64   // offset of the first message after what was returned
	pending []Entry // read past what the last Fetch took
	used    time.Time
}

// producerClient is the topic's view of the Kafka front end's producer: it has no
// connection of its own; a disconnect (unload, deletion) makes the log reopen.
type producerClient struct{ l *topicLog }

func (c producerClient) Granted(*topics.Producer) {}
func (c producerClient) Disconnect()              { c.l.dead.Store(true) }
func (c producerClient) Refuse(error)             { c.l.dead.Store(true) }
func (c producerClient) Alive() bool              { return !c.l.dead.Load() }
func (c producerClient) Address() string          { return "kafka" }
func (c producerClient) Version() string          { return "kafka" }

func openTopicLog(ctx context.Context, be *TopicsBackend, t *topics.Topic) (*topicLog, error) {
	l := &topicLog{be: be, t: t}
	p, err := t.AddProducer(ctx, topics.ProducerSpec{Name: be.svc.NewProducerName(), Mode: topics.SharedAccess}, producerClient{l})
	if err != nil {
		return nil, err
	}
	l.p = p
	ls, err := be.res.KafkaLogStart(ctx, t.Name().String())
	switch {
	case err == nil:
		if first := t.FirstPosition(); first.LedgerID <= ls.LedgerID {
			l.start = ls
		}
	case !errors.Is(err, resources.ErrNotFound):
		p.Close()
		return nil, err
	}
	return l, nil
}

// Live tells whether the log may still be used (the topic has not been unloaded).
func (l *topicLog) Live() bool { return !l.dead.Load() && l.be.svc.Loaded(l.t.Name()) == l.t }

func (l *topicLog) errDead() error {
	return fmt.Errorf("%w: %s was unloaded from this broker", ErrNotLeader, l.t.Name())
}

// Append implements Log.
func (l *topicLog) Append(entry []byte, count int, tx *txn.ID, done func(int64, error)) {
	if !l.Live() {
		done(-1, l.errDead())
		return
	}
	meta := topics.ParseEntryMeta(entry)
	seq := l.seq.Add(1)
	err := l.p.PublishIndexed(topics.Message{Data: entry, Meta: meta, SequenceID: seq, HighestSequenceID: seq, Txn: tx},
		func(_ topics.Position, index int64, err error) {
			if err != nil {
				done(-1, err)
				return
			}
			done(index-int64(max(meta.Count, 1))+1, nil)
		})
	if err != nil {
		done(-1, err)
	}
}

// Read implements Log.
func (l *topicLog) Read(ctx context.Context, offset int64, maxBytes int) ([]Entry, error) {
	ctx = topics.Internal(ctx) // authorized by the front end (sasl.go)
	if !l.Live() {
		return nil, l.errDead()
	}
	if offset >= l.t.HighWatermark() {
		return nil, nil
	}
	lr, err := l.reader(ctx, offset)
	if err != nil {
		return nil, err
	}
	defer l.release(lr)
	var out []Entry
	size := 0
	take := func(e Entry) bool {
		if len(out) > 0 && size+len(e.Data) > maxBytes {
			return false
		}
		out = append(out, e)
		size += len(e.Data)
		return true
	}
	for len(lr.pending) > 0 {
		if !take(lr.pending[0]) {
			break
		}
		lr.pending = lr.pending[1:]
	}
	for len(lr.pending) == 0 && size < maxBytes && lr.r.HasMore() {
		es, err := lr.r.Read(ctx, readBatch(maxBytes-size))
		if err != nil {
			lr.r.Close()
			lr.r = nil // reopened on next use
			return out, err
		}
		for _, te := range es {
			e, ok := l.kafkaEntry(te)
			if !ok || e.Base+int64(e.Count) <= offset {
				continue // an entry stored before indexes, or before the offset
			}
			if len(lr.pending) > 0 || !take(e) {
				lr.pending = append(lr.pending, e)
			}
		}
	}
	if len(out) > 0 {
		last := out[len(out)-1]
		lr.next = last.Base + int64(last.Count)
	}
	return out, nil
}

// readBatch is how many entries one reader read asks for: enough for the bytes wanted at
// a small entry size, bounded.
func readBatch(bytes int) int { return min(max(bytes/1024, 1), 256) }

// kafkaEntry is a stored entry as the Kafka layer sees it: offsets from its index, the
// Pulsar entry behind the broker entry metadata, and whether it is a transaction marker or
// of an aborted transaction.
func (l *topicLog) kafkaEntry(e topics.Entry) (Entry, bool) {
	last, _, ok := topics.EntryIndex(e)
	if !ok {
		return Entry{}, false
	}
	_, data, err := wire.SplitHeadersAndPayload(e.Data)
	if err != nil {
		return Entry{}, false
	}
	n := max(e.Meta.Count, 1)
	out := Entry{Base: last - int64(n) + 1, Count: n, Data: data}
	switch {
	case e.Meta.Marker == txn.MarkerTxnCommit:
		out.Kind = EntryCommitMarker
	case e.Meta.Marker == txn.MarkerTxnAbort:
		out.Kind = EntryAbortMarker
	case e.Meta.Marker != 0:
		out.Kind = EntryAbortMarker // another marker (none is written today): never data
	case l.t.TxnAborted(e.Meta):
		out.Kind = EntryAborted
	}
	return out, true
}

// reader returns a reader positioned at offset, marked busy.
func (l *topicLog) reader(ctx context.Context, offset int64) (*logReader, error) {
	l.mu.Lock()
	var pick *logReader
	for i, lr := range l.readers {
		if lr == nil {
			lr = &logReader{}
			l.readers[i] = lr
		}
		if lr.busy {
			continue
		}
		if lr.r != nil && (lr.next == offset || len(lr.pending) > 0 && lr.pending[0].Base <= offset && offset < lr.pending[0].Base+int64(lr.pending[0].Count)) {
			pick = lr
			break
		}
		if pick == nil || pick.r != nil && (lr.r == nil || lr.used.Before(pick.used)) {
			pick = lr
		}
	}
	if pick == nil {
		l.mu.Unlock()
		// Every reader is busy: a reader of its own for this read.
		return l.seekReader(ctx, &logReader{}, offset)
	}
	pick.busy, pick.used = true, time.Now()
	l.mu.Unlock()
	if pick.r != nil && pick.next == offset {
		return pick, nil
	}
	if pick.r != nil && len(pick.pending) > 0 && pick.pending[0].Base <= offset && offset < pick.pending[0].Base+int64(pick.pending[0].Count) {
		return pick, nil
	}
	lr, err := l.seekReader(ctx, pick, offset)
	if err != nil {
		l.release(pick)
	}
	return lr, err
}

// seekReader moves lr (opening its reader if needed) to the entry holding offset.
func (l *topicLog) seekReader(ctx context.Context, lr *logReader, offset int64) (*logReader, error) {
	pos, err := l.t.SearchIndex(ctx, offset)
	if err != nil {
		return nil, err
	}
	lr.pending = nil
	lr.next = -1
	if lr.r == nil {
		// Uncommitted: a fetch sends open and aborted transactions' entries and markers
		// the way Kafka does, and stops at the last stable offset itself for
		// read_committed (fetch.go).
		if lr.r, err = l.t.NewUncommittedReader(ctx, pos); err != nil {
			return nil, err
		}
		return lr, nil
	}
	lr.r.Seek(pos)
	return lr, nil
}

func (l *topicLog) release(lr *logReader) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, r := range l.readers {
		if r == lr {
			lr.busy = false
			return
		}
	}
	if lr.r != nil { // a one-off reader
		lr.r.Close()
	}
}

// Wait implements Log.
func (l *topicLog) Wait(offset int64) <-chan struct{} { return l.t.WaitIndex(offset) }

// LastStable implements Log.
func (l *topicLog) LastStable(ctx context.Context) (int64, error) {
	return l.t.LastStableIndex(topics.Internal(ctx))
}

// HighWatermark implements Log.
func (l *topicLog) HighWatermark() int64 { return l.t.HighWatermark() }

// StartOffset implements Log: the first stored message, or DeleteRecords' mark within the
// first ledger.
func (l *topicLog) StartOffset() int64 {
	ctx, cancel := context.WithTimeout(topics.Internal(context.Background()), openTimeout)
	defer cancel()
	start, err := l.t.StartIndex(ctx)
	if err != nil {
		start = 0
	}
	l.mu.Lock()
	mark := l.start.Offset
	l.mu.Unlock()
	return max(start, min(mark, l.t.HighWatermark()))
}

// OffsetForTime implements Log: by the time the broker stored each batch (Kafka's
// LogAppendTime; a CreateTime in the future or far past does not move it).
func (l *topicLog) OffsetForTime(ctx context.Context, ms int64) (int64, error) {
	ctx = topics.Internal(ctx) // authorized by the front end (sasl.go)
	off, err := l.t.IndexAtTime(ctx, ms)
	if err != nil {
		return 0, err
	}
	return max(off, l.StartOffset()), nil
}

// Truncate implements Log: whole ledgers before offset go (subscriptions behind move up),
// and the mark hides the rest of the messages below offset.
func (l *topicLog) Truncate(ctx context.Context, offset int64) error {
	ctx = topics.Internal(ctx) // authorized by the front end (sasl.go)
	offset = min(offset, l.t.HighWatermark())
	if offset <= l.StartOffset() {
		return nil
	}
	pos, err := l.t.TrimBeforeIndex(ctx, offset)
	if err != nil {
		return err
	}
	mark := resources.KafkaLogStart{Offset: offset, LedgerID: pos.LedgerID}
	if err := l.be.res.PutKafkaLogStart(ctx, l.t.Name().String(), mark); err != nil {
		return err
	}
	l.mu.Lock()
	l.start = mark
	l.mu.Unlock()
	return nil
}

// Close releases the producer and readers.
func (l *topicLog) Close() {
	l.p.Close()
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, lr := range l.readers {
		if lr != nil && lr.r != nil && !lr.busy {
			lr.r.Close()
			lr.r = nil
		}
	}
}

// TxnOpen implements Log: the topic's transaction buffer still holds id open.
func (l *topicLog) TxnOpen(id txn.ID) bool {
	b := l.t.TxnBuffer()
	if b == nil {
		return false
	}
	_, aborted, ok := b.TxnStats(id)
	return ok && !aborted
}

// AbortTxn implements Log.
func (l *topicLog) AbortTxn(ctx context.Context, id txn.ID) error {
	ctx = topics.Internal(ctx) // authorized by the front end (sasl.go)
	if l.be.txns != nil {
		if c, ok := l.be.txns.Loaded(id.Most); ok {
			if _, known := c.Get(id); known {
				if err := c.End(ctx, id, txn.Abort); !errors.Is(err, txn.ErrNotFound) {
					return err
				}
			}
		}
	}
	// Low water mark 0: this is no coordinator's statement about its other transactions.
	return l.be.svc.EndTxnOnPartition(ctx, l.t.Name(), id, false, 0)
}
