package topics

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/magnetar-io/magnetar/internal/wire"
)

// Message indexes (PIP-70 broker entry metadata).
//
// Every entry a persistent topic stores starts with a broker entry metadata block
// (wire/bem.go) holding the time the broker appended it and its index: the topic-wide
// number of the entry's last message, counting messages from 0. An entry of n messages
// whose block says index i holds messages i-n+1 .. i. The indexes are the Kafka front end's
// offsets (contiguous per partition, stored with the entries, so nothing else has to agree
// with the log), and Pulsar consumers that declared supports_broker_entry_metadata get
// them too (the Go client's Message.Index()).
//
// Indexes are assigned in topicLog.append under entryIndex.mu, in the order the entries go
// to the managed ledger, whose callbacks come back in that order; so stored indexes grow
// with position. A failed add leaves a gap (the managed ledger fails every pending add at
// once; the indexes of later adds are not reused), which Kafka consumers step over like a
// compacted offset. At load the next index is recovered from the last stored entry.
// Entries written before indexes existed have no block: they sort before every indexed
// entry (searchIndex) and the first indexed message gets index 0.

// entryIndex is a topic log's index state.
type entryIndex struct {
	// mu orders index assignment with the managed ledger's append order; next is the index
	// the next message appended gets.
	mu   sync.Mutex
	next int64
	// stored is one more than the index of the newest stored message: the high watermark.
	// Set by the append callbacks (which come in append order), read without locks.
	stored atomic.Int64
	// wmu guards wake, closed and replaced when stored moves (a Kafka long poll waits on it).
	wmu  sync.Mutex
	wake chan struct{}
	// first caches the index of the first stored message for the position it was read at.
	firstMu  sync.Mutex
	firstPos Position
	firstIdx int64
}

// recoverIndex reads the newest entry's index: the next message gets the one after it.
func (l *topicLog) recoverIndex(ctx context.Context) error {
	lc := l.lastConfirmed()
	next := int64(0)
	if lc.EntryID >= 0 {
		e, err := l.readAt(ctx, lc)
		if err != nil {
			return fmt.Errorf("reading the last entry for its index: %w", err)
		}
		idx, ts, ok, err := wire.StoredIndex(e.Data)
		if err != nil {
			return fmt.Errorf("%w: last entry %v: %w", wire.ErrPersistence, lc, err)
		}
		if ok {
			next = idx + 1
			l.lastPublish.Store(ts)
		}
	}
	l.idx.next = next
	l.idx.stored.Store(next)
	return nil
}

// append stores data behind its broker entry metadata and calls done once it is durable,
// with its position and index (the index of its last message), or with an error. Callbacks
// come in append order. An error returned by append itself means done is never called.
// buf, when data is its tail with room in front (EntryBuffer), takes the block in that
// room; otherwise data is copied behind room of its own.
func (l *topicLog) append(data, buf []byte, meta EntryMeta, done func(Position, int64, error)) error {
	n := int64(msgCount(meta))
	room, ok := roomBefore(data, buf)
	if !ok {
		// The entry is copied behind room for the block before the lock; the block is
		// written right-aligned into that room once the index is known.
		data, buf = EntryBuffer(data)
		room = buf[:wire.MaxBrokerEntryMetadataSize]
	}
	// room ends where data starts: the stored entry is the block, then data.
	at := len(buf) - len(data) - wire.MaxBrokerEntryMetadataSize
	now := uint64(l.ml.Clock().Now().UnixMilli())
	l.idx.mu.Lock()
	defer l.idx.mu.Unlock()
	last := l.idx.next + n - 1
	entry := buf[at+wire.PutBrokerEntryMetadata(room, now, uint64(last)):]
	// The callback never takes idx.mu: the managed ledger may call it inline.
	err := mlErr(l.ml.AddEntryMeta(entry, meta, func(p Position, err error) {
		if err == nil {
			l.idx.advance(last + 1)
			l.lastPublish.Store(int64(now))
		}
		done(p, last, mlErr(err))
	}))
	if err == nil {
		l.idx.next = last + 1
	}
	return err
}

// roomBefore returns the wire.MaxBrokerEntryMetadataSize bytes of buf right before data when
// data is buf's tail with at least that much in front of it.
func roomBefore(data, buf []byte) ([]byte, bool) {
	r := len(buf) - len(data)
	if len(data) == 0 || r < wire.MaxBrokerEntryMetadataSize || &buf[len(buf)-1] != &data[len(data)-1] {
		return nil, false
	}
	return buf[r-wire.MaxBrokerEntryMetadataSize : r], true
}

// EntryBuffer copies entry into a new buffer with room in front for the broker entry
// metadata every stored entry starts with. A front end that must copy an entry anyway
// (its read buffer is reused) copies it with EntryBuffer and passes data as Message.Data
// and buf as Message.Buf: the service then stores it without a second copy.
func EntryBuffer(entry []byte) (data, buf []byte) {
	buf = make([]byte, wire.MaxBrokerEntryMetadataSize+len(entry))
	copy(buf[wire.MaxBrokerEntryMetadataSize:], entry)
	return buf[wire.MaxBrokerEntryMetadataSize:], buf
}

// advance records that every message below next is stored and wakes the waiters.
func (x *entryIndex) advance(next int64) {
	if next <= x.stored.Load() {
		return
	}
	x.stored.Store(next)
	x.wmu.Lock()
	if x.wake != nil {
		close(x.wake)
		x.wake = nil
	}
	x.wmu.Unlock()
}

// HighWatermark is one more than the index of the newest stored message: the index the next
// message gets, unless an append in flight fails (0 for an empty or non-persistent topic).
func (t *Topic) HighWatermark() int64 {
	if t.log == nil {
		return 0
	}
	return t.log.idx.stored.Load()
}

// WaitIndex returns a channel closed once a message with an index at or above index is
// stored (closed already if one is). A channel may also close when other messages arrive;
// callers check again.
func (t *Topic) WaitIndex(index int64) <-chan struct{} {
	if t.log == nil {
		ch := make(chan struct{})
		close(ch)
		return ch
	}
	x := &t.log.idx
	x.wmu.Lock()
	defer x.wmu.Unlock()
	if x.stored.Load() > index {
		ch := make(chan struct{})
		close(ch)
		return ch
	}
	if x.wake == nil {
		x.wake = make(chan struct{})
	}
	return x.wake
}

// SearchIndex returns the position of the first entry holding a message with an index at
// or above index (its entry may start before it), or the position after the last entry if
// there is none. It reads O(log n) entries.
func (t *Topic) SearchIndex(ctx context.Context, index int64) (Position, error) {
	if t.log == nil {
		return Position{}, fmt.Errorf("%w: %s is not persistent", wire.ErrNotAllowed, t.full)
	}
	p, err := t.log.ml.Search(ctx, func(data []byte) (bool, error) {
		last, _, ok, err := wire.StoredIndex(data)
		return ok && last >= index, err
	})
	return p, mlErr(err)
}

// EntryIndex is the index of the last message of a stored entry and the time the broker
// stored it (Unix ms); ok is false for an entry stored before indexes existed.
func EntryIndex(e Entry) (last, brokerTime int64, ok bool) {
	last, brokerTime, ok, err := wire.StoredIndex(e.Data)
	return last, brokerTime, ok && err == nil
}

// StartIndex is the index of the first stored message (retention and TrimBeforeIndex move
// it), the high watermark when nothing is stored.
func (t *Topic) StartIndex(ctx context.Context) (int64, error) {
	if t.log == nil {
		return 0, nil
	}
	x := &t.log.idx
	first := t.log.ml.FirstPosition()
	if !t.log.ml.LastConfirmedEntry().Less(first) {
		x.firstMu.Lock()
		if x.firstPos == first {
			idx := x.firstIdx
			x.firstMu.Unlock()
			return idx, nil
		}
		x.firstMu.Unlock()
		e, err := t.log.readAt(ctx, first)
		if err != nil {
			return 0, err
		}
		idx := int64(0) // an unindexed first entry: the indexed ones start at 0
		if last, _, ok := EntryIndex(e); ok {
			idx = last - int64(msgCount(metaOf(e))) + 1
		}
		x.firstMu.Lock()
		x.firstPos, x.firstIdx = first, idx
		x.firstMu.Unlock()
		return idx, nil
	}
	return t.HighWatermark(), nil
}

// TrimBeforeIndex drops the messages below index as Kafka's DeleteRecords does: every
// subscription behind the entry holding index moves up to it (as a clear-backlog would;
// its consumers stay connected), then the ledgers entirely before that entry are deleted,
// retention notwithstanding. Messages of that entry's ledger before it stay stored (a
// front end hides them itself). It returns the entry's position.
func (t *Topic) TrimBeforeIndex(ctx context.Context, index int64) (Position, error) {
	if err := t.s.authorize(ctx, ActionAdmin, t.name); err != nil {
		return Position{}, err
	}
	pos, err := t.SearchIndex(ctx, index)
	if err != nil {
		return Position{}, err
	}
	before := Position{LedgerID: pos.LedgerID, EntryID: pos.EntryID - 1}
	for _, c := range t.log.subscriptionCursors() {
		if !c.MarkDeletePosition().Less(before) {
			continue
		}
		err := t.moveCursor(ctx, c.Name(), func(cur *logCursor) error { return cur.markDelete(ctx, before) })
		if err != nil && !errors.Is(err, wire.ErrSubscriptionNotFound) {
			return Position{}, fmt.Errorf("moving subscription %s up to %v: %w", c.Name(), pos, err)
		}
	}
	if err := t.log.ml.Retention().TrimBefore(ctx, pos); err != nil {
		return Position{}, mlErr(err)
	}
	return pos, nil
}

// moveCursor runs move on the durable cursor of sub, through its subscription when
// consumers attached it (dispatch state reset, consumers stay), creating the cursor at the
// earliest entry if it does not exist.
func (t *Topic) moveCursor(ctx context.Context, sub string, move func(*logCursor) error) error {
	if sb := t.attached(sub); sb != nil {
		return sb.reset(move)
	}
	cur, err := t.log.openCursor(ctx, sub, true)
	if err != nil {
		return err
	}
	return move(cur)
}

// CommitSubscription sets the durable subscription sub to have consumed everything up to
// and including markDelete (back or forth; created if it does not exist) with the cursor
// properties props, and persists that before returning. It is Kafka's offset commit: the
// subscription is named after the group, the exact offset is a property, and Pulsar's
// backlog, retention and stats see it as any subscription.
func (t *Topic) CommitSubscription(ctx context.Context, sub string, markDelete Position, props map[string]int64) error {
	if err := t.s.authorize(ctx, ActionConsume, t.name); err != nil {
		return err
	}
	if t.log == nil {
		return fmt.Errorf("%w: %s is not persistent", wire.ErrNotAllowed, t.full)
	}
	if sub == "" || isSystemCursor(sub) {
		return fmt.Errorf("%w: subscription name %q is reserved or empty", wire.ErrNotAllowed, sub)
	}
	return t.moveCursor(ctx, sub, func(cur *logCursor) error {
		if markDelete.Less(cur.markDeletePosition()) {
			next := Position{LedgerID: markDelete.LedgerID, EntryID: markDelete.EntryID + 1}
			if err := cur.resetTo(ctx, next); err != nil {
				return err
			}
		}
		if err := mlErr(cur.c.MarkDeleteWithProperties(markDelete, props)); err != nil {
			return err
		}
		return mlErr(cur.c.Flush(ctx))
	})
}

// SubscriptionState is a durable subscription's mark-delete position and cursor properties;
// ok is false when the topic has no such subscription.
func (t *Topic) SubscriptionState(sub string) (markDelete Position, props map[string]int64, ok bool) {
	if t.log == nil || isSystemCursor(sub) {
		return Position{}, nil, false
	}
	c, ok := t.log.ml.Cursor(sub)
	if !ok || !c.IsDurable() {
		return Position{}, nil, false
	}
	return c.MarkDeletePosition(), c.Properties(), true
}

// IndexAtTime is the index of the first message of the first entry the broker stored at or
// after ms (Unix milliseconds; the broker entry metadata's time, which grows with position,
// so it is a bounded search), or the high watermark if there is none. It is Kafka's
// ListOffsets by timestamp, at entry granularity.
func (t *Topic) IndexAtTime(ctx context.Context, ms int64) (int64, error) {
	if t.log == nil {
		return 0, fmt.Errorf("%w: %s is not persistent", wire.ErrNotAllowed, t.full)
	}
	hw := t.HighWatermark()
	p, err := t.log.ml.Search(ctx, func(data []byte) (bool, error) {
		_, bt, ok, err := wire.StoredIndex(data)
		return ok && bt >= ms, err
	})
	if err != nil {
		return 0, mlErr(err)
	}
	if t.log.ml.LastConfirmedEntry().Less(p) {
		return hw, nil
	}
	e, err := t.log.readAt(ctx, p)
	if err != nil {
		return 0, err
	}
	last, _, ok := EntryIndex(e)
	if !ok {
		return hw, nil
	}
	return last - int64(msgCount(metaOf(e))) + 1, nil
}

// FirstPosition is the position of the oldest stored entry (the end position when none).
func (t *Topic) FirstPosition() Position {
	if t.log == nil {
		return Position{}
	}
	return t.log.ml.FirstPosition()
}
