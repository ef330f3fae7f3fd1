package txn

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/magnetar-io/magnetar/internal/config"
	"github.com/magnetar-io/magnetar/internal/managedledger"
	"github.com/magnetar-io/magnetar/internal/wire"
)

// TopicStateOptions are a topic's collaborators for its transaction state.
type TopicStateOptions struct {
	// Topic is the topic's full name (logs, stats).
	Topic string
	// Log is the topic's managed ledger.
	Log *managedledger.ManagedLedger
	// Ledgers opens the topic's transaction-state log.
	Ledgers *managedledger.Factory
	// Config has the snapshot thresholds.
	Config config.TransactionConfig
	// Logger is the parent logger (nil: discard).
	Logger *slog.Logger
	// Now is the clock (nil: the Ledgers factory's clock).
	Now func() time.Time
	// AppendMarker appends a marker entry to the topic's log (nil: Log.AddEntry). The topic
	// service passes its own, so that markers carry their dispatch metadata.
	AppendMarker func(data []byte, cb func(Position, error)) error
}

// TopicState is the transaction state of one persistent topic: its transaction buffer and
// the pending acknowledgements of its subscriptions, and the log both keep their state in
// (a managed ledger of its own, StateLogName). A topic that never saw a transaction has no
// such log; Prepare creates it before the first transactional publish or acknowledgement.
type TopicState struct {
	o    TopicStateOptions
	lg   *slog.Logger
	now  func() time.Time
	buf  *Buffer
	name string // of the state log

	prepMu sync.Mutex
	ready  atomic.Bool // the state log exists and holds a snapshot
	logv   atomic.Pointer[recordLog]

	mu       sync.Mutex
	closed   bool
	subs     map[string]*PendingAcks
	replayed map[string][]stateEntry // acknowledgement records of subscriptions not attached yet
}

// stateEntry is a replayed record and where it is.
type stateEntry struct {
	pos recPos
	rec *stateRecord
}

// StateLogName is the managed ledger holding the transaction state of the topic whose log
// is topicLog ("tenant/ns/persistent/t" -> "tenant/ns/transaction-state/t"). No topic name
// maps to it.
func StateLogName(topicLog string) string {
	parts := strings.SplitN(topicLog, "/", 4)
	if len(parts) == 4 {
		parts[2] = "transaction-state"
		return strings.Join(parts, "/")
	}
	return topicLog + "/transaction-state"
}

// OpenTopicState loads a topic's transaction state: with a state log, the latest buffer
// snapshot and a replay of the topic after it (which hides everything after the snapshot
// until it ends), and the pending acknowledgements of its subscriptions. It must run before
// the topic is used: until it returns, what consumers may read is not known.
func OpenTopicState(ctx context.Context, o TopicStateOptions) (*TopicState, error) {
	if o.Log == nil || o.Ledgers == nil {
		return nil, fmt.Errorf("%w: a topic state needs the topic's log and managed ledgers", ErrNotAllowed)
	}
	lg := o.Logger
	if lg == nil {
		lg = slog.New(slog.DiscardHandler)
	}
	st := &TopicState{o: o, now: o.Now, name: StateLogName(o.Log.Name()), subs: map[string]*PendingAcks{}}
	st.lg = lg.With("component", "txn-topic", "topic", o.Topic)
	if st.now == nil {
		st.now = o.Ledgers.Clock().Now
	}
	st.buf = newBuffer(st)
	st.buf.stats.recoverStart = st.now()
	exists, err := o.Ledgers.Exists(ctx, st.name)
	if err != nil {
		return nil, fmt.Errorf("txn: %s: looking for its transaction state: %w", o.Topic, err)
	}
	if !exists {
		st.buf.ready = true
		st.buf.stats.recoverEnd = st.buf.stats.recoverStart
		return st, nil
	}
	l, err := openRecordLog(ctx, o.Ledgers, st.name, stateBatch(o.Config))
	if err != nil {
		return nil, fmt.Errorf("txn: %s: %w", o.Topic, err)
	}
	var snap *snapshot
	var snapPos recPos
	var stale []recPos
	acks := map[string][]stateEntry{}
	err = l.replay(ctx, func(p recPos, data []byte) error {
		r, err := decodeState(data)
		if err != nil {
			return err
		}
		switch r.kind {
		case stSnapshot:
			if snap != nil {
				stale = append(stale, snapPos)
			}
			snap, snapPos = r.snap, p
		default:
			acks[r.sub] = append(acks[r.sub], stateEntry{p, r})
		}
		return nil
	})
	if err != nil {
		_ = l.close(ctx)
		return nil, fmt.Errorf("txn: %s: %w", o.Topic, err)
	}
	for sub, es := range acks {
		if _, ok := o.Log.Cursor(sub); !ok {
			// The subscription was deleted: its transactions no longer matter here.
			for _, e := range es {
				stale = append(stale, e.pos)
			}
			delete(acks, sub)
		}
	}
	_ = l.drop(stale...)
	st.logv.Store(l)
	st.replayed = acks
	if snap == nil {
		// The log was created but its first snapshot never written: no transaction wrote
		// here yet (Prepare finishes before the first transactional append).
		st.buf.ready = true
		st.buf.stats.recoverEnd = st.now()
		return st, nil
	}
	st.ready.Store(true)
	if err := st.buf.recover(ctx, snap, snapPos); err != nil {
		_ = l.close(ctx)
		return nil, fmt.Errorf("txn: %s: recovering the transaction buffer: %w", o.Topic, err)
	}
	return st, nil
}

// Buffer is the topic's transaction buffer.
func (st *TopicState) Buffer() *Buffer { return st.buf }

// prepared tells whether the state log is ready for the buffer's and pending acks' records.
func (st *TopicState) prepared() bool { return st.ready.Load() }

// Used tells whether the topic has seen transactional work (its state log exists): only
// then may its log hold markers and transactional entries.
func (st *TopicState) Used() bool { return st.ready.Load() }

// Prepare makes the topic ready for transactional publishes and acknowledgements: it
// creates the state log with a first snapshot if the topic has none. It may block on
// storage; callers run it before the first transactional operation, outside the topic's
// publish order (after it, the log exists for good).
func (st *TopicState) Prepare(ctx context.Context) error {
	if st.ready.Load() {
		return nil
	}
	st.prepMu.Lock()
	defer st.prepMu.Unlock()
	if st.ready.Load() {
		return nil
	}
	st.mu.Lock()
	closed := st.closed
	st.mu.Unlock()
	if closed {
		return ErrClosed
	}
	l := st.logv.Load()
	if l == nil {
		var err error
		if l, err = openRecordLog(ctx, st.o.Ledgers, st.name, stateBatch(st.o.Config)); err != nil {
			return fmt.Errorf("%w: %s: creating its transaction state: %w", ErrClosed, st.o.Topic, err)
		}
		st.logv.Store(l)
	}
	b := st.buf
	b.mu.Lock()
	s := b.snapshotLocked()
	b.mu.Unlock()
	p, err := appendWait(ctx, l, encodeState(&stateRecord{kind: stSnapshot, snap: s}))
	if err != nil {
		return fmt.Errorf("%w: %s: writing its first transaction buffer snapshot: %w", wire.ErrPersistence, st.o.Topic, err)
	}
	b.mu.Lock()
	b.snapPos, b.hasSnap, b.lastSnap = p, true, st.now()
	b.mu.Unlock()
	st.ready.Store(true)
	return nil
}

// appendWait appends rec to l and waits until it is durable.
func appendWait(ctx context.Context, l *recordLog, rec []byte) (recPos, error) {
	type res struct {
		p   recPos
		err error
	}
	ch := make(chan res, 1)
	if err := l.append(rec, func(p recPos, err error) { ch <- res{p, err} }); err != nil {
		return recPos{}, err
	}
	select {
	case r := <-ch:
		return r.p, r.err
	case <-ctx.Done():
		return recPos{}, ctx.Err()
	}
}

// appendState appends a record to the state log (Prepare ran).
func (st *TopicState) appendState(rec []byte, cb func(recPos, error)) error {
	l := st.logv.Load()
	if l == nil || !st.ready.Load() {
		return fmt.Errorf("%w: %s has no transaction state yet", ErrClosed, st.o.Topic)
	}
	return l.append(rec, cb)
}

// dropState acknowledges state records no longer needed.
func (st *TopicState) dropState(ps ...recPos) {
	if l := st.logv.Load(); l != nil {
		if err := l.drop(ps...); err != nil {
			st.lg.Warn("acknowledging transaction state records failed; they are replayed and dropped again", "err", err)
		}
	}
}

// appendMarker appends a marker entry to the topic's log.
func (st *TopicState) appendMarker(data []byte, cb func(Position, error)) error {
	if st.o.AppendMarker != nil {
		return st.o.AppendMarker(data, cb)
	}
	return st.o.Log.AddEntry(data, cb)
}

// Close stops the buffer and the pending acknowledgements and closes the state log (not
// the topic's log, which is its owner's).
func (st *TopicState) Close(ctx context.Context) error {
	st.mu.Lock()
	if st.closed {
		st.mu.Unlock()
		return nil
	}
	st.closed = true
	subs := st.subs
	st.subs = map[string]*PendingAcks{}
	st.mu.Unlock()
	st.buf.close()
	for _, pa := range subs {
		pa.close()
	}
	st.prepMu.Lock() // a Prepare in progress finishes first
	defer st.prepMu.Unlock()
	if l := st.logv.Load(); l != nil {
		return l.close(ctx)
	}
	return nil
}

// Delete closes the state and deletes its log (the topic is being deleted).
func (st *TopicState) Delete(ctx context.Context) error {
	if err := st.Close(ctx); err != nil {
		st.lg.Warn("closing the transaction state before deleting it", "err", err)
	}
	exists, err := st.o.Ledgers.Exists(ctx, st.name)
	if err != nil || !exists {
		return err
	}
	return st.o.Ledgers.Delete(ctx, st.name)
}
