package txn

import (
	"container/list"
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/magnetar-io/magnetar/internal/managedledger"
	"github.com/magnetar-io/magnetar/internal/wire"
)

// Buffer is the transaction buffer of one topic. Transactional entries are stored in the
// topic's own log like any other; the buffer decides what consumers may see:
//
//   - The read limit (Pulsar's max-read position) stops every cursor of the topic before
//     the first entry of the oldest transaction still open, so nothing after it is
//     delivered either: the topic's order is the order of commits as seen at the oldest
//     open transaction. An append of a transaction not yet known to the buffer hides
//     everything after the log's end at the time it was handed to the log, until it is
//     durable and its position known (the log wakes readers before callbacks run).
//   - End writes a marker entry (TXN_COMMIT or TXN_ABORT); once it is durable the
//     transaction leaves the open set. Entries of aborted transactions are never delivered
//     (Aborted tells dispatch to acknowledge them instead, as it does markers).
//
// Snapshots in the topic's state log (maxRead, aborted transactions, low water marks)
// bound what a recovery replays: the entries after maxRead, which bring back every
// transaction still open and every end after the snapshot.
type Buffer struct {
	st    *TopicState
	ml    *managedledger.ManagedLedger
	topic string
	lg    *slog.Logger
	now   func() time.Time

	mu       sync.Mutex
	ready    bool
	closed   bool
	recMax   Position // while recovering: entries after it are hidden
	ongoing  map[ID]*list.Element
	order    *list.List // *openTxn by first position
	inflight map[ID]*list.Element
	inOrder  *list.List // *inflightTxn by bound
	ending   map[ID]*endOp
	aborted  map[ID]Position // abort marker positions
	// committed holds transactions committed here above their coordinator's low water
	// mark: a late append of one is refused like one of an aborted transaction.
	committed map[ID]struct{}
	lowWater  map[uint64]uint64
	markerSeq uint64

	endedSinceSnap int
	lastSnap       time.Time
	snapPos        recPos
	hasSnap        bool
	snapping       bool
	snapTimer      *time.Timer

	stats bufferCounters
}

type openTxn struct {
	id      ID
	first   Position
	entries int64
}

type inflightTxn struct {
	id    ID
	bound Position // entries at or after it stay hidden until the first append lands
	n     int
}

type endOp struct {
	action Action
	done   chan struct{}
	err    error
}

type bufferCounters struct {
	committed, aborted, appended int64
	replayed                     int // entries the last recovery read
	recoverStart, recoverEnd     time.Time
}

func newBuffer(st *TopicState) *Buffer {
	return &Buffer{
		st: st, ml: st.o.Log, topic: st.o.Topic, lg: st.lg, now: st.now,
		ongoing: map[ID]*list.Element{}, order: list.New(),
		inflight: map[ID]*list.Element{}, inOrder: list.New(),
		ending: map[ID]*endOp{}, aborted: map[ID]Position{}, committed: map[ID]struct{}{},
		lowWater: map[uint64]uint64{},
	}
}

// after is the exclusive bound just past p.
func after(p Position) Position { return Position{LedgerID: p.LedgerID, EntryID: p.EntryID + 1} }

// before is the inclusive position just before the exclusive bound p.
func before(p Position) Position {
	if p.EntryID <= 0 {
		return Position{LedgerID: p.LedgerID, EntryID: -1}
	}
	return Position{LedgerID: p.LedgerID, EntryID: p.EntryID - 1}
}

// limitLocked is the read limit the buffer's state calls for.
func (b *Buffer) limitLocked() (Position, bool) {
	var lim Position
	on := false
	take := func(p Position) {
		if !on || p.Less(lim) {
			lim, on = p, true
		}
	}
	if !b.ready {
		take(after(b.recMax))
	}
	if e := b.order.Front(); e != nil {
		take(e.Value.(*openTxn).first)
	}
	if e := b.inOrder.Front(); e != nil {
		take(e.Value.(*inflightTxn).bound)
	}
	return lim, on
}

// applyLocked sets the topic's read limit. Lock order: b.mu before the log's own.
func (b *Buffer) applyLocked() {
	lim, on := b.limitLocked()
	b.ml.SetReadLimit(lim, on)
}

// MaxRead is the newest position consumers may read (Pulsar's maxReadPosition).
func (b *Buffer) MaxRead() Position {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.maxReadLocked()
}

func (b *Buffer) maxReadLocked() Position {
	if lim, on := b.limitLocked(); on {
		return before(lim)
	}
	return b.ml.LastConfirmedEntry()
}

// BeforeAppend admits a transactional entry of id about to be appended to the topic's log;
// the caller appends it next (appends and BeforeAppend calls in the same order) and calls
// Appended with the outcome. Entries of transactions that ended here are refused.
func (b *Buffer) BeforeAppend(id ID) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	switch {
	case b.closed:
		return ErrClosed
	case !b.ready:
		return fmt.Errorf("%w: the transaction buffer of %s is recovering", wire.ErrServiceNotReady, b.topic)
	case !b.st.prepared():
		return fmt.Errorf("%w: the transaction state of %s is not ready (Prepare)", wire.ErrServiceNotReady, b.topic)
	}
	if _, ok := b.aborted[id]; ok {
		return fmt.Errorf("%w: transaction %s was aborted", ErrNotAllowed, id)
	}
	if op := b.ending[id]; op != nil {
		return fmt.Errorf("%w: transaction %s is ending (%s)", ErrNotAllowed, id, op.action)
	}
	if _, ok := b.ongoing[id]; ok {
		return nil
	}
	if _, ok := b.committed[id]; ok {
		return fmt.Errorf("%w: transaction %s was committed", ErrNotAllowed, id)
	}
	if lw, ok := b.lowWater[id.Most]; ok && id.Least <= lw {
		return fmt.Errorf("%w: transaction %s has ended (coordinator %d low water mark %d)", ErrNotAllowed, id, id.Most, lw)
	}
	if e := b.inflight[id]; e != nil {
		e.Value.(*inflightTxn).n++
		return nil
	}
	b.inflight[id] = b.inOrder.PushBack(&inflightTxn{id: id, bound: after(b.ml.LastConfirmedEntry()), n: 1})
	b.applyLocked()
	return nil
}

// Appended records the outcome of an append BeforeAppend admitted.
func (b *Buffer) Appended(id ID, pos Position, err error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	var inf *inflightTxn
	if e := b.inflight[id]; e != nil {
		inf = e.Value.(*inflightTxn)
		inf.n--
		if err == nil || inf.n <= 0 {
			b.inOrder.Remove(e)
			delete(b.inflight, id)
		}
	}
	if err == nil {
		b.stats.appended++
		if e := b.ongoing[id]; e != nil {
			e.Value.(*openTxn).entries++
		} else {
			b.ongoing[id] = b.order.PushBack(&openTxn{id: id, first: pos, entries: 1})
		}
	}
	if inf != nil {
		b.applyLocked()
	}
}

// Aborted tells whether id was aborted here: dispatch acknowledges its entries instead of
// delivering them.
func (b *Buffer) Aborted(id ID) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	_, ok := b.aborted[id]
	return ok
}

// End commits or aborts id on this topic (END_TXN_ON_PARTITION): it writes the marker and
// returns once the marker is durable. Ending a transaction that ended here already, or
// committing one that wrote nothing here, succeeds without a marker. lowWater is the
// coordinator's low water mark.
func (b *Buffer) End(ctx context.Context, id ID, action Action, lowWater uint64) error {
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return ErrClosed
	}
	if !b.ready {
		b.mu.Unlock()
		return fmt.Errorf("%w: the transaction buffer of %s is recovering", wire.ErrServiceNotReady, b.topic)
	}
	b.noteLowWaterLocked(id.Most, lowWater)
	if op := b.ending[id]; op != nil {
		b.mu.Unlock()
		if op.action != action {
			return fmt.Errorf("%w: transaction %s is ending with %s", ErrInvalidStatus, id, op.action)
		}
		return waitOp(ctx, op)
	}
	_, isAborted := b.aborted[id]
	_, open := b.ongoing[id]
	_, inflight := b.inflight[id]
	switch {
	case action == Commit && isAborted:
		b.mu.Unlock()
		return fmt.Errorf("%w: transaction %s was aborted on %s", ErrNotAllowed, id, b.topic)
	case action == Abort && isAborted:
		b.mu.Unlock()
		return nil
	case action == Commit && !open && !inflight:
		// Nothing of it here (or committed already): nothing to make visible.
		if lw, ok := b.lowWater[id.Most]; !ok || id.Least > lw {
			b.committed[id] = struct{}{}
		}
		b.mu.Unlock()
		return nil
	}
	op := &endOp{action: action, done: make(chan struct{})}
	b.ending[id] = op
	b.markerSeq++
	marker := NewMarker(action, id, b.markerSeq, b.now())
	b.mu.Unlock()
	err := b.st.appendMarker(marker, func(pos Position, err error) {
		b.mu.Lock()
		defer b.mu.Unlock()
		if err == nil {
			if e := b.ongoing[id]; e != nil {
				b.order.Remove(e)
				delete(b.ongoing, id)
			}
			if action == Abort {
				b.aborted[id] = pos
				b.stats.aborted++
			} else {
				if lw, ok := b.lowWater[id.Most]; !ok || id.Least > lw {
					b.committed[id] = struct{}{}
				}
				b.stats.committed++
			}
			b.endedSinceSnap++
			b.applyLocked()
			b.maybeSnapshotLocked()
		}
		delete(b.ending, id)
		op.err = err
		close(op.done)
	})
	if err != nil {
		b.mu.Lock()
		delete(b.ending, id)
		b.mu.Unlock()
		return fmt.Errorf("%w: writing the %s marker of %s on %s: %w", wire.ErrPersistence, action, id, b.topic, err)
	}
	return waitOp(ctx, op)
}

func waitOp(ctx context.Context, op *endOp) error {
	select {
	case <-op.done:
		if op.err != nil {
			return fmt.Errorf("%w: %w", wire.ErrPersistence, op.err)
		}
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// noteLowWaterLocked records a coordinator's low water mark: transactions of it at or
// below the mark have ended, so their late appends are refused; the committed set keeps
// only those above it.
func (b *Buffer) noteLowWaterLocked(tc, lw uint64) {
	if old, ok := b.lowWater[tc]; ok && old >= lw {
		return
	}
	b.lowWater[tc] = lw
	for id := range b.committed {
		if id.Most == tc && id.Least <= lw {
			delete(b.committed, id)
		}
	}
	// An open transaction at or below the mark never had its end sent here (a coordinator
	// computes its mark only over transactions ended on every participant): a client wrote
	// without registering the partition. Abort it, or it would hide the topic for good.
	for id := range b.ongoing {
		if id.Most == tc && id.Least <= lw && b.ending[id] == nil {
			b.lg.Warn("aborting an open transaction its coordinator says has ended", "txn", id, "lowWaterMark", lw)
			go func(id ID) {
				ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
				defer cancel()
				if err := b.End(ctx, id, Abort, lw); err != nil {
					b.lg.Warn("aborting a stale transaction failed", "txn", id, "err", err)
				}
			}(id)
		}
	}
}
