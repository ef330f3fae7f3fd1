package kafka

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/magnetar-io/magnetar/internal/txn"
	"github.com/magnetar-io/magnetar/internal/wire"
)

// partition is one partition log opened on this broker, with the idempotent producers'
// sequence state (KIP-98): per producer id the epoch and the last few batches, so a
// retried batch is answered with its original offset instead of being stored twice, and
// a gap is refused.
//
// The state is not written anywhere of its own: each stored entry names its producer
// ("kafka-idem-<id>-<epoch>") and sequence range in its metadata, so opening a partition
// rebuilds it from the last producerStateWindow messages of the log. A producer retrying
// after a broker crash retries within seconds, so its batches are in that window.
type partition struct {
	s    *Server
	name string // Pulsar partition name
	log  Log

	// appendMu orders appends: sequence checks and Log.Append happen in one critical
	// section, so entries are stored in the order their sequences were checked. mu guards
	// the state and is never held across Log.Append, whose callback may run inline.
	appendMu  sync.Mutex
	mu        sync.Mutex
	producers map[int64]*producerState
	broken    error // an append failed: the log's state is unknown; reopen
	owners    txnOwners
}

// txnOwners remembers which Kafka producer (id, epoch) wrote each of the partition's recent
// transactions, from its appends and the log's tail read at open: internal/txn writes a
// transaction's markers without one, and a control batch names it. Bounded (oldest
// forgotten first); a marker of a transaction not remembered goes out with producer id -1.
type txnOwners struct {
	mu   sync.Mutex
	m    map[txn.ID]txnOwner
	ring [txnOwnersKept]txn.ID
	n    int
}

type txnOwner struct {
	pid   int64
	epoch int16
}

// txnOwnersKept is how many transactions a partition remembers the producers of: enough
// for a consumer a few thousand transactions behind the log's end.
const txnOwnersKept = 4096

func (o *txnOwners) put(id txn.ID, pid int64, epoch int16) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.m == nil {
		o.m = map[txn.ID]txnOwner{}
	}
	if _, ok := o.m[id]; !ok {
		slot := &o.ring[o.n%txnOwnersKept]
		if o.n >= txnOwnersKept {
			delete(o.m, *slot)
		}
		*slot = id
		o.n++
	}
	o.m[id] = txnOwner{pid, epoch}
}

// get is the producer of transaction id, ok false if it is not remembered.
func (o *txnOwners) get(id txn.ID) (pid int64, epoch int16, ok bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	w, ok := o.m[id]
	return w.pid, w.epoch, ok
}

// producerStateWindow is how many trailing messages a partition open reads to rebuild
// producer state.
const producerStateWindow = 20_000

// recentBatches is how many batches per producer are remembered for duplicate detection
// (Kafka's max.in.flight.requests.per.connection bound for idempotence is 5).
const recentBatches = 5

type producerState struct {
	epoch   int16
	lastSeq int32 // sequence of the newest record accepted, -1 before any
	recent  [recentBatches]batchMeta
	n       int // batches recorded (ring position = n % recentBatches)
	// lastTime is the publish time (ms) of its newest stored batch (DescribeProducers'
	// LastTimestamp: the broker's clock, which a restart rebuilds from the entries).
	lastTime int64
	// txn is the transaction of its newest transactional batch and txnStart the offset of
	// that transaction's first batch here (-1: none). Whether it is still open is the
	// topic's transaction buffer's to say (Log.TxnOpen), so nothing here tracks its end.
	txn      txn.ID
	txnStart int64
}

// newProducerState is the state of a producer first seen at epoch.
func newProducerState(epoch int16) *producerState {
	return &producerState{epoch: epoch, lastSeq: -1, lastTime: -1, txnStart: -1}
}

// stored records one of the producer's batches stored at base (publish time ms, its
// transaction or nil).
func (st *producerState) stored(base, publishMs int64, tx *txn.ID) {
	st.lastTime = max(st.lastTime, publishMs)
	if tx != nil && (st.txnStart < 0 || st.txn != *tx) {
		st.txn, st.txnStart = *tx, base
	}
}

type batchMeta struct {
	firstSeq, lastSeq int32
	base              int64 // -1 while the append is in flight
}

// idemProducerName is the Pulsar producer name of entries from idempotent producer id at
// epoch.
func idemProducerName(id int64, epoch int16) string {
	return "kafka-idem-" + strconv.FormatInt(id, 10) + "-" + strconv.Itoa(int(epoch))
}

func parseIdemProducerName(s string) (id int64, epoch int16, ok bool) {
	rest, ok := strings.CutPrefix(s, "kafka-idem-")
	if !ok {
		return 0, 0, false
	}
	a, b, ok := strings.Cut(rest, "-")
	if !ok {
		return 0, 0, false
	}
	id, err1 := strconv.ParseInt(a, 10, 64)
	e, err2 := strconv.ParseInt(b, 10, 16)
	return id, int16(e), err1 == nil && err2 == nil
}

// partition returns the open partition called name, opening it (and rebuilding its
// producer state) if needed.
func (s *Server) partition(ctx context.Context, name string) (*partition, error) {
	s.mu.Lock()
	p := s.logs[name]
	s.mu.Unlock()
	if p != nil {
		if p.ok() {
			return p, nil
		}
		s.dropPartition(p)
	}
	l, err := s.be.Open(ctx, name)
	if err != nil {
		return nil, err
	}
	p = &partition{s: s, name: name, log: l, producers: map[int64]*producerState{}}
	if err := p.recover(ctx); err != nil {
		return nil, fmt.Errorf("kafka: rebuilding producer state of %s: %w", name, err)
	}
	s.mu.Lock()
	if cur := s.logs[name]; cur != nil {
		s.mu.Unlock()
		if c, ok := l.(closableLog); ok {
			c.Close()
		}
		return cur, nil // another request opened it first
	}
	s.logs[name] = p
	s.mu.Unlock()
	return p, nil
}

func (s *Server) dropPartition(p *partition) {
	s.mu.Lock()
	dropped := s.logs[p.name] == p
	if dropped {
		delete(s.logs, p.name)
	}
	s.mu.Unlock()
	if c, ok := p.log.(closableLog); ok && dropped {
		c.Close()
	}
}

// closableLog is a Log that holds resources (the topic service's producer and readers)
// and can tell when it went stale (its topic was unloaded from this broker).
type closableLog interface {
	Live() bool
	Close()
}

// recover reads the log's tail and records the idempotent producers' batches found there.
func (p *partition) recover(ctx context.Context) error {
	hw := p.log.HighWatermark()
	from := max(p.log.StartOffset(), hw-producerStateWindow)
	for from < hw {
		entries, err := p.log.Read(ctx, from, 4<<20)
		if err != nil {
			return err
		}
		if len(entries) == 0 {
			return nil
		}
		for _, e := range entries {
			p.recordStored(e)
			from = e.Base + int64(e.Count)
		}
	}
	return nil
}

func (p *partition) recordStored(e Entry) {
	pe, err := wire.ParseEntry(e.Data, false)
	if err != nil {
		return
	}
	md, err := wire.ParseMetadata(pe.Metadata)
	if err != nil {
		return
	}
	id, epoch, ok := parseIdemProducerName(md.GetProducerName())
	if !ok || md.HighestSequenceId == nil {
		return
	}
	st := p.producers[id]
	if st == nil || epoch > st.epoch {
		st = newProducerState(epoch)
		p.producers[id] = st
	} else if epoch < st.epoch {
		return
	}
	first, last := int32(md.GetSequenceId()), int32(md.GetHighestSequenceId())
	st.add(batchMeta{firstSeq: first, lastSeq: last, base: e.Base})
	var tx *txn.ID
	if info := txn.InfoOf(md); info.InTxn {
		tx = &info.Txn
		p.owners.put(info.Txn, id, epoch)
	}
	st.stored(e.Base, int64(md.GetPublishTime()), tx)
}

func (st *producerState) add(b batchMeta) *batchMeta {
	slot := &st.recent[st.n%recentBatches]
	*slot = b
	st.n++
	st.lastSeq = b.lastSeq
	return slot
}

// errInFlight answers a retry whose original is still being stored: the client retries
// again and then gets the original's offset. Never acknowledge a batch whose original
// may still fail.
var errInFlight = fmt.Errorf("%w: the original of this retried batch is still being stored", kerr.RequestTimedOut)

// append stores one batch (entry, its records count) and calls done with its base offset.
// Idempotent batches are checked against the producer's state first; a duplicate is
// answered with the original's offset and not stored. publishMs is the entry's publish
// time, tx the transaction of a transactional batch (nil otherwise).
func (p *partition) append(b *producedBatch, entry []byte, publishMs int64, tx *txn.ID, done func(int64, error)) {
	p.appendMu.Lock()
	defer p.appendMu.Unlock()
	p.mu.Lock()
	if p.broken != nil {
		err := p.broken
		p.mu.Unlock()
		done(-1, err)
		return
	}
	var slot *batchMeta
	var st *producerState
	if b.producerID >= 0 {
		st = p.producers[b.producerID]
		first := b.baseSequence
		last := first + int32(len(b.records)) - 1
		switch {
		case st == nil || b.producerEpoch > st.epoch:
			// A new producer (or a bumped epoch): Kafka accepts any first sequence of an
			// unknown producer since its state may have been expired.
			if st != nil && first != 0 {
				p.mu.Unlock()
				done(-1, fmt.Errorf("%w: producer %d epoch %d must start at sequence 0, not %d", ErrOutOfOrderSequence, b.producerID, b.producerEpoch, first))
				return
			}
			st = newProducerState(b.producerEpoch)
			p.producers[b.producerID] = st
		case b.producerEpoch < st.epoch:
			p.mu.Unlock()
			done(-1, fmt.Errorf("%w: producer %d epoch %d is older than %d", ErrProducerFenced, b.producerID, b.producerEpoch, st.epoch))
			return
		default:
			for i := range st.recent {
				r := st.recent[i]
				if i < st.n && r.firstSeq == first && r.lastSeq == last {
					p.mu.Unlock()
					if r.base < 0 {
						done(-1, errInFlight)
					} else {
						done(r.base, nil)
					}
					return
				}
			}
			if first != st.lastSeq+1 && !(st.lastSeq == maxSeq && first == 0) {
				p.mu.Unlock()
				done(-1, fmt.Errorf("%w: producer %d sent sequence %d after %d", ErrOutOfOrderSequence, b.producerID, first, st.lastSeq))
				return
			}
		}
		slot = st.add(batchMeta{firstSeq: first, lastSeq: last, base: -1})
	}
	p.mu.Unlock()
	p.log.Append(entry, len(b.records), tx, func(base int64, err error) {
		if err != nil {
			p.mu.Lock()
			// What was stored is unknown now (the log failed mid-stream): forget the
			// partition so the next request reopens it and rebuilds the state from what
			// the log really holds.
			if p.broken == nil {
				p.broken = err
			}
			p.mu.Unlock()
			p.s.dropPartition(p)
			done(-1, err)
			return
		}
		if slot != nil {
			p.mu.Lock()
			// The ring may have moved on if a producer has more batches in flight than it
			// remembers; then this batch is simply no longer tracked.
			if slot.firstSeq == b.baseSequence && slot.base < 0 {
				slot.base = base
			}
			st.stored(base, publishMs, tx)
			p.mu.Unlock()
			if tx != nil {
				p.owners.put(*tx, b.producerID, b.producerEpoch)
			}
		}
		done(base, nil)
	})
}

const maxSeq = int32(^uint32(0) >> 1)

// openTimeout bounds opening a partition inside a request.
const openTimeout = 30 * time.Second

// isNotLeader tells whether err means another broker owns the partition.
func isNotLeader(err error) bool {
	return errors.Is(err, ErrNotLeader) || errors.Is(err, wire.ErrServiceNotReady)
}
