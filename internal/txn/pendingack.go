package txn

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/magnetar-io/magnetar/internal/wire"
)

// SubscriptionOps is what pending acknowledgements need of their subscription; the topic
// service implements it over the subscription's cursor and dispatcher. None of its methods
// is called with a PendingAcks lock held, so they may call back into it.
type SubscriptionOps interface {
	// Acknowledged tells whether the whole entry at p is acknowledged.
	Acknowledged(p Position) bool
	// Remaining is the ack_set of the entry's batch members not yet acknowledged (bit i
	// set: member i is not), nil when none was acknowledged alone.
	Remaining(p Position) []uint64
	// BatchSize is the number of messages of the entry at p (0: not known).
	BatchSize(p Position) int
	// MarkDeletePosition is the newest position up to which everything is acknowledged.
	MarkDeletePosition() Position
	// Ack acknowledges for real (a committed transaction): each whole entry, or its batch
	// members left out of Bits; cumulatively up to the one position if cumulative.
	Ack(acks []AckPos, cumulative bool) error
	// Redeliver makes entries an aborted transaction had acknowledged deliverable again.
	Redeliver(ps []Position)
	// Persisted makes the subscription's acknowledgements durable now and tells whether
	// these ones are (a cursor may persist only some of its acknowledged ranges).
	Persisted(ctx context.Context, acks []AckPos, cumulative bool) (bool, error)
}

// PendingAcks are the acknowledgements of one subscription made within transactions still
// open: they are held (the entries are neither delivered again nor acknowledged) until the
// transaction ends, then applied (commit) or released for redelivery (abort). Each is in
// the topic's state log before the client hears it was taken, so a restart brings it back.
// An acknowledgement that overlaps another open transaction's, or something acknowledged
// already, is ErrConflict. A committed transaction's records stay in the log until the
// subscription persisted its acknowledgements (a replay applies them again).
type PendingAcks struct {
	st  *TopicState
	sub string
	ops SubscriptionOps
	lg  *slog.Logger

	mu       sync.Mutex
	closed   bool
	txns     map[ID]*txnAcks
	whole    map[Position]ID
	bits     map[Position]map[ID][]uint64 // batch members acknowledged (bit set: acknowledged)
	cum      *txnAcks                     // the transaction holding a cumulative acknowledgement
	lowWater map[uint64]uint64
	done     []doneAcks
	cleaner  *time.Timer
	stats    pendingAckCounters
}

// pendingAckCounters are a subscription's pulsar_txn_tp_* values (metrics_topic.go).
type pendingAckCounters struct {
	committed, aborted, commitFailed, abortFailed int64
	// commitLatency is made at the first commit: most subscriptions never see one.
	commitLatency prometheus.Summary
}

// txnAcks is one open transaction's acknowledgements on the subscription.
type txnAcks struct {
	id         ID
	acks       map[Position][]uint64 // nil: the whole entry
	cumulative *Position
	records    []recPos
	end        *endOp
}

// doneAcks are a committed transaction's acknowledgements, applied, whose records wait
// until the subscription persisted them.
type doneAcks struct {
	acks       []AckPos
	cumulative bool
	records    []recPos
}

// cleanupEvery is how often committed records are checked for being persisted.
const cleanupEvery = time.Second

// Subscription returns the pending acknowledgements of subscription name, attaching ops;
// the first call per subscription replays the subscription's records: open transactions
// hold their acknowledgements again, committed ones are applied again. Call it before the
// subscription dispatches.
func (st *TopicState) Subscription(name string, ops SubscriptionOps) (*PendingAcks, error) {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.closed {
		return nil, ErrClosed
	}
	if pa := st.subs[name]; pa != nil {
		return pa, nil
	}
	pa := &PendingAcks{
		st: st, sub: name, ops: ops, lg: st.lg.With("subscription", name),
		txns: map[ID]*txnAcks{}, whole: map[Position]ID{}, bits: map[Position]map[ID][]uint64{},
		lowWater: map[uint64]uint64{},
	}
	es := st.replayed[name]
	commits, stale := pa.replay(es)
	st.subs[name] = pa
	st.mu.Unlock()
	defer st.mu.Lock()
	// Commits logged before a restart are applied again (acknowledging twice is harmless).
	for _, c := range commits {
		if err := pa.applyCommit(c); err != nil {
			// The next attach replays the records again.
			st.mu.Lock()
			delete(st.subs, name)
			st.mu.Unlock()
			return nil, err
		}
	}
	st.mu.Lock()
	delete(st.replayed, name)
	st.mu.Unlock()
	st.dropState(stale...)
	return pa, nil
}

// RemoveSubscription forgets the pending acknowledgements of a deleted subscription.
func (st *TopicState) RemoveSubscription(name string) {
	st.mu.Lock()
	pa := st.subs[name]
	delete(st.subs, name)
	es := st.replayed[name]
	delete(st.replayed, name)
	st.mu.Unlock()
	var ps []recPos
	for _, e := range es {
		ps = append(ps, e.pos)
	}
	if pa != nil {
		ps = append(ps, pa.close()...)
	}
	st.dropState(ps...)
}

// committedTxn is a replayed commit to apply.
type committedTxn struct {
	t      *txnAcks
	endPos recPos
}

// replay rebuilds the subscription's state from its records, in log order.
func (pa *PendingAcks) replay(es []stateEntry) (commits []committedTxn, stale []recPos) {
	for _, e := range es {
		r := e.rec
		switch r.kind {
		case stAck:
			t := pa.txns[r.id]
			if t == nil {
				t = &txnAcks{id: r.id, acks: map[Position][]uint64{}}
				pa.txns[r.id] = t
			}
			t.records = append(t.records, e.pos)
			pa.holdLocked(t, pa.requestAcked(r.acks), r.cumulative)
		case stAckEnd:
			t := pa.txns[r.id]
			if t == nil {
				stale = append(stale, e.pos)
				continue
			}
			delete(pa.txns, r.id)
			t.records = append(t.records, e.pos)
			if r.action == Abort {
				pa.releaseLocked(t)
				stale = append(stale, t.records...)
				continue
			}
			commits = append(commits, committedTxn{t: t, endPos: e.pos})
		}
	}
	return commits, stale
}

// requestAcked turns request ack_sets (bit set: not acknowledged) into acknowledged bits.
func (pa *PendingAcks) requestAcked(acks []AckPos) map[Position][]uint64 {
	out := make(map[Position][]uint64, len(acks))
	for _, a := range acks {
		if a.Bits == nil {
			out[a.Pos] = nil
			continue
		}
		n := pa.ops.BatchSize(a.Pos)
		if n <= 0 {
			n = 64 * len(a.Bits)
		}
		acked := make([]uint64, (n+63)/64)
		for i := range acked {
			var rem uint64
			if i < len(a.Bits) {
				rem = a.Bits[i]
			}
			acked[i] = ^rem & wordMask(n, i)
		}
		out[a.Pos] = acked
	}
	return out
}

// wordMask is the bits of word i that name members of a batch of n.
func wordMask(n, i int) uint64 {
	switch left := n - 64*i; {
	case left >= 64:
		return ^uint64(0)
	case left <= 0:
		return 0
	default:
		return 1<<uint(left) - 1
	}
}

func anySet(b []uint64) bool {
	for _, w := range b {
		if w != 0 {
			return true
		}
	}
	return false
}

func overlaps(a, b []uint64) bool {
	for i := 0; i < len(a) && i < len(b); i++ {
		if a[i]&b[i] != 0 {
			return true
		}
	}
	return false
}

// holdLocked records t's acknowledgements (no checks: checkLocked ran, or a replay).
func (pa *PendingAcks) holdLocked(t *txnAcks, acks map[Position][]uint64, cumulative bool) {
	for p, b := range acks {
		if cumulative {
			if t.cumulative == nil || t.cumulative.Less(p) {
				pp := p
				t.cumulative = &pp
			}
			pa.cum = t
			continue
		}
		if b == nil {
			t.acks[p] = nil
			pa.whole[p] = t.id
			continue
		}
		old, had := t.acks[p]
		if had && old == nil {
			continue // the whole entry already
		}
		merged := make([]uint64, max(len(old), len(b)))
		for i := range merged {
			if i < len(old) {
				merged[i] |= old[i]
			}
			if i < len(b) {
				merged[i] |= b[i]
			}
		}
		t.acks[p] = merged
		m := pa.bits[p]
		if m == nil {
			m = map[ID][]uint64{}
			pa.bits[p] = m
		}
		m[t.id] = merged
	}
}

// releaseLocked drops t's held acknowledgements.
func (pa *PendingAcks) releaseLocked(t *txnAcks) {
	for p, b := range t.acks {
		if b == nil {
			if pa.whole[p] == t.id {
				delete(pa.whole, p)
			}
			continue
		}
		if m := pa.bits[p]; m != nil {
			delete(m, t.id)
			if len(m) == 0 {
				delete(pa.bits, p)
			}
		}
	}
	if pa.cum == t {
		pa.cum = nil
	}
}

// Ack acknowledges acks within transaction id (a Pulsar ACK with txnid; Bits are ack_sets
// of batch members). It returns once the acknowledgement is in the log, or ErrConflict.
func (pa *PendingAcks) Ack(ctx context.Context, id ID, acks []AckPos, cumulative bool) error {
	if len(acks) == 0 {
		return nil
	}
	if cumulative && len(acks) != 1 {
		return fmt.Errorf("%w: a cumulative acknowledgement names one position, not %d", ErrNotAllowed, len(acks))
	}
	if !pa.st.prepared() {
		return fmt.Errorf("%w: the transaction state of %s is not ready (Prepare)", wire.ErrServiceNotReady, pa.st.o.Topic)
	}
	// What the subscription already acknowledged (asked without the lock).
	for i := range acks {
		if pa.ops.Acknowledged(acks[i].Pos) {
			return fmt.Errorf("%w: %s is acknowledged already on %s", ErrConflict, acks[i].Pos, pa.sub)
		}
	}
	md := pa.ops.MarkDeletePosition()
	req := pa.requestAcked(acks)
	for p, b := range req {
		if b == nil {
			continue
		}
		if rem := pa.ops.Remaining(p); rem != nil {
			eff := make([]uint64, len(b))
			for i := range b {
				if i < len(rem) {
					eff[i] = b[i] & rem[i]
				}
			}
			if !anySet(eff) {
				return fmt.Errorf("%w: the messages of %s are acknowledged already on %s", ErrConflict, p, pa.sub)
			}
			req[p] = eff
		}
	}
	pa.mu.Lock()
	if err := pa.checkLocked(id, req, cumulative, md); err != nil {
		pa.mu.Unlock()
		return err
	}
	t := pa.txns[id]
	created := t == nil
	if created {
		t = &txnAcks{id: id, acks: map[Position][]uint64{}}
		pa.txns[id] = t
	}
	undo := pa.snapshotTxn(t)
	pa.holdLocked(t, req, cumulative)
	pa.mu.Unlock()

	rec := encodeState(&stateRecord{kind: stAck, sub: pa.sub, id: id, cumulative: cumulative, acks: acks})
	p, err := appendWaitState(ctx, pa.st, rec)
	pa.mu.Lock()
	defer pa.mu.Unlock()
	if err != nil {
		// Not taken: as if the request never came (a record that did land later is
		// replayed as a pending acknowledgement the transaction's end settles).
		pa.releaseLocked(t)
		undo(pa)
		if created && len(t.acks) == 0 && t.cumulative == nil {
			delete(pa.txns, id)
		}
		return fmt.Errorf("%w: logging a transactional acknowledgement on %s: %w", wire.ErrPersistence, pa.sub, err)
	}
	t.records = append(t.records, p)
	return nil
}

// snapshotTxn returns a function restoring t's acknowledgements as they are now.
func (pa *PendingAcks) snapshotTxn(t *txnAcks) func(*PendingAcks) {
	acks := make(map[Position][]uint64, len(t.acks))
	for p, b := range t.acks {
		acks[p] = append([]uint64(nil), b...)
		if b == nil {
			acks[p] = nil
		}
	}
	var cum *Position
	if t.cumulative != nil {
		c := *t.cumulative
		cum = &c
	}
	hadCum := pa.cum == t
	return func(pa *PendingAcks) {
		t.acks, t.cumulative = map[Position][]uint64{}, cum
		pa.holdLocked(t, acks, false)
		if hadCum {
			pa.cum = t
		}
	}
}

// checkLocked refuses what overlaps another open transaction's acknowledgements.
func (pa *PendingAcks) checkLocked(id ID, req map[Position][]uint64, cumulative bool, md Position) error {
	if pa.closed {
		return ErrClosed
	}
	if lw, ok := pa.lowWater[id.Most]; ok && id.Least <= lw && pa.txns[id] == nil {
		return fmt.Errorf("%w: transaction %s has ended", ErrNotAllowed, id)
	}
	if t := pa.txns[id]; t != nil && t.end != nil {
		return fmt.Errorf("%w: transaction %s is ending", ErrNotAllowed, id)
	}
	other := func(x ID) bool { return x != id }
	if cumulative {
		var p Position
		for q := range req {
			p = q
		}
		if !md.Less(p) {
			return fmt.Errorf("%w: cumulative acknowledgement of %s at or before the mark-delete position %s", ErrConflict, p, md)
		}
		if pa.cum != nil && other(pa.cum.id) {
			return fmt.Errorf("%w: transaction %s holds a cumulative acknowledgement on %s", ErrConflict, pa.cum.id, pa.sub)
		}
		for q, x := range pa.whole {
			if other(x) && !p.Less(q) {
				return fmt.Errorf("%w: %s is acknowledged by transaction %s", ErrConflict, q, x)
			}
		}
		for q, m := range pa.bits {
			for x := range m {
				if other(x) && !p.Less(q) {
					return fmt.Errorf("%w: messages of %s are acknowledged by transaction %s", ErrConflict, q, x)
				}
			}
		}
		return nil
	}
	for p, b := range req {
		if pa.cum != nil && other(pa.cum.id) && !pa.cum.cumulative.Less(p) {
			return fmt.Errorf("%w: %s is under the cumulative acknowledgement of transaction %s", ErrConflict, p, pa.cum.id)
		}
		if x, ok := pa.whole[p]; ok && other(x) {
			return fmt.Errorf("%w: %s is acknowledged by transaction %s", ErrConflict, p, x)
		}
		for x, xb := range pa.bits[p] {
			if other(x) && (b == nil || overlaps(b, xb)) {
				return fmt.Errorf("%w: messages of %s are acknowledged by transaction %s", ErrConflict, p, x)
			}
		}
	}
	return nil
}

// appendWaitState appends a state record and waits until it is durable.
func appendWaitState(ctx context.Context, st *TopicState, rec []byte) (recPos, error) {
	l := st.logv.Load()
	if l == nil || !st.prepared() {
		return recPos{}, fmt.Errorf("%w: %s has no transaction state yet", ErrClosed, st.o.Topic)
	}
	return appendWait(ctx, l, rec)
}
