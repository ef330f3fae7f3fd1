package txn

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/magnetar-io/magnetar/internal/wire"
)

// End commits or aborts transaction id's acknowledgements on the subscription
// (END_TXN_ON_SUBSCRIPTION): the decision goes to the log first, then a commit applies
// the acknowledgements and an abort releases the entries for redelivery. A transaction that
// acknowledged nothing here (or ended here already) ends without a record.
func (pa *PendingAcks) End(ctx context.Context, id ID, action Action, lowWater uint64) error {
	pa.mu.Lock()
	if pa.closed {
		pa.mu.Unlock()
		return ErrClosed
	}
	if old, ok := pa.lowWater[id.Most]; !ok || old < lowWater {
		pa.lowWater[id.Most] = lowWater
	}
	t := pa.txns[id]
	if t == nil {
		pa.mu.Unlock()
		return nil
	}
	if t.end != nil {
		op := t.end
		pa.mu.Unlock()
		if op.action != action {
			return fmt.Errorf("%w: transaction %s is ending with %s", ErrInvalidStatus, id, op.action)
		}
		return waitOp(ctx, op)
	}
	op := &endOp{action: action, done: make(chan struct{})}
	t.end = op
	pa.mu.Unlock()
	start := pa.st.now()

	p, err := appendWaitState(ctx, pa.st, encodeState(&stateRecord{kind: stAckEnd, sub: pa.sub, id: id, action: action}))
	if err != nil {
		pa.mu.Lock()
		t.end = nil
		pa.countEndLocked(action, false, 0)
		pa.mu.Unlock()
		op.err = err
		close(op.done)
		return fmt.Errorf("%w: logging the %s of %s on %s: %w", wire.ErrPersistence, action, id, pa.sub, err)
	}
	pa.mu.Lock()
	t.records = append(t.records, p)
	pa.mu.Unlock()
	if action == Commit {
		err = pa.applyCommit(committedTxn{t: t, endPos: p})
	} else {
		pa.applyAbort(t)
	}
	pa.mu.Lock()
	pa.countEndLocked(action, err == nil, pa.st.now().Sub(start))
	pa.mu.Unlock()
	op.err = err
	close(op.done)
	return err
}

// countEndLocked counts an END_TXN_ON_SUBSCRIPTION that held acknowledgements here, as
// Pulsar's pending-ack handle does: succeeded or failed, and a successful commit's latency
// in microseconds. (A replayed commit is not an end the coordinator asked for: not counted.)
func (pa *PendingAcks) countEndLocked(action Action, ok bool, took time.Duration) {
	switch {
	case action == Commit && ok:
		pa.stats.committed++
		if pa.stats.commitLatency == nil {
			pa.stats.commitLatency = newCommitLatency()
		}
		pa.stats.commitLatency.Observe(float64(took.Microseconds()))
	case action == Commit:
		pa.stats.commitFailed++
	case ok:
		pa.stats.aborted++
	default:
		pa.stats.abortFailed++
	}
}

// applyCommit applies a committed transaction's acknowledgements, then drops its hold:
// in that order, so that no entry is deliverable between the two. On failure the
// transaction stays, ending; the coordinator retries and End applies it again.
func (pa *PendingAcks) applyCommit(c committedTxn) error {
	t := c.t
	pa.mu.Lock()
	var acks []AckPos
	var cum []AckPos
	for p, b := range t.acks {
		a := AckPos{Pos: p}
		if b != nil {
			n := pa.ops.BatchSize(p)
			if n <= 0 {
				n = 64 * len(b)
			}
			a.Bits = make([]uint64, (n+63)/64)
			for i := range a.Bits {
				var w uint64
				if i < len(b) {
					w = b[i]
				}
				a.Bits[i] = ^w & wordMask(n, i)
			}
		}
		acks = append(acks, a)
	}
	slices.SortFunc(acks, func(x, y AckPos) int { return x.Pos.Compare(y.Pos) })
	if t.cumulative != nil {
		cum = []AckPos{{Pos: *t.cumulative}}
	}
	pa.mu.Unlock()
	if len(acks) > 0 {
		if err := pa.ops.Ack(acks, false); err != nil {
			return fmt.Errorf("%w: applying the commit of %s on %s: %w", wire.ErrPersistence, t.id, pa.sub, err)
		}
	}
	if cum != nil {
		if err := pa.ops.Ack(cum, true); err != nil {
			return fmt.Errorf("%w: applying the commit of %s on %s: %w", wire.ErrPersistence, t.id, pa.sub, err)
		}
	}
	pa.mu.Lock()
	defer pa.mu.Unlock()
	pa.releaseLocked(t)
	delete(pa.txns, t.id)
	if len(acks) > 0 {
		pa.done = append(pa.done, doneAcks{acks: acks, records: t.records})
		t.records = nil
	}
	if cum != nil {
		pa.done = append(pa.done, doneAcks{acks: cum, cumulative: true, records: t.records})
		t.records = nil
	}
	if len(t.records) > 0 {
		pa.st.dropState(t.records...)
	}
	pa.armCleanerLocked()
	return nil
}

// applyAbort releases an aborted transaction's entries for redelivery.
func (pa *PendingAcks) applyAbort(t *txnAcks) {
	pa.mu.Lock()
	var ps []Position
	for p := range t.acks {
		ps = append(ps, p)
	}
	if t.cumulative != nil {
		ps = append(ps, *t.cumulative)
	}
	pa.releaseLocked(t)
	delete(pa.txns, t.id)
	records := t.records
	pa.mu.Unlock()
	slices.SortFunc(ps, func(a, b Position) int { return a.Compare(b) })
	pa.ops.Redeliver(ps)
	pa.st.dropState(records...)
}

// armCleanerLocked schedules a pass over committed records.
func (pa *PendingAcks) armCleanerLocked() {
	if pa.cleaner != nil || pa.closed || len(pa.done) == 0 {
		return
	}
	pa.cleaner = time.AfterFunc(cleanupEvery, pa.clean)
}

// clean drops the records of committed transactions whose acknowledgements the
// subscription has persisted.
func (pa *PendingAcks) clean() {
	pa.mu.Lock()
	pa.cleaner = nil
	done := pa.done
	pa.done = nil
	pa.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var keep []doneAcks
	var drop []recPos
	for i, d := range done {
		ok, err := pa.ops.Persisted(ctx, d.acks, d.cumulative)
		if err != nil {
			keep = append(keep, done[i:]...)
			break
		}
		if ok {
			drop = append(drop, d.records...)
		} else {
			keep = append(keep, d)
		}
	}
	pa.st.dropState(drop...)
	pa.mu.Lock()
	defer pa.mu.Unlock()
	if pa.closed {
		return
	}
	pa.done = append(keep, pa.done...)
	pa.armCleanerLocked()
}

// Pending tells what of the entry at p open transactions hold: the whole entry, or some
// batch members (bits set: held). Dispatch does not deliver a held entry and leaves held
// members out of the ack_set it sends.
func (pa *PendingAcks) Pending(p Position) (whole bool, bits []uint64) {
	pa.mu.Lock()
	defer pa.mu.Unlock()
	if _, ok := pa.whole[p]; ok {
		return true, nil
	}
	if pa.cum != nil && !pa.cum.cumulative.Less(p) {
		return true, nil
	}
	m := pa.bits[p]
	if len(m) == 0 {
		return false, nil
	}
	for _, b := range m {
		if len(b) > len(bits) {
			bits = append(bits, make([]uint64, len(b)-len(bits))...)
		}
		for i := range b {
			bits[i] |= b[i]
		}
	}
	return false, bits
}

// close stops the pending acknowledgements and returns their records (RemoveSubscription
// drops them).
func (pa *PendingAcks) close() []recPos {
	pa.mu.Lock()
	defer pa.mu.Unlock()
	pa.closed = true
	if pa.cleaner != nil {
		pa.cleaner.Stop()
		pa.cleaner = nil
	}
	var ps []recPos
	for _, t := range pa.txns {
		ps = append(ps, t.records...)
	}
	for _, d := range pa.done {
		ps = append(ps, d.records...)
	}
	return ps
}

// PendingAckStats is Pulsar's TransactionPendingAckStats.
type PendingAckStats struct {
	State              string
	Ongoing            int
	Committed, Aborted int64
}

// Stats returns the subscription's pending-acknowledgement state.
func (pa *PendingAcks) Stats() PendingAckStats {
	pa.mu.Lock()
	defer pa.mu.Unlock()
	state := "Ready"
	if pa.closed {
		state = "Close"
	}
	return PendingAckStats{State: state, Ongoing: len(pa.txns), Committed: pa.stats.committed, Aborted: pa.stats.aborted}
}

// TxnStats is Pulsar's TransactionInPendingAckStats: id's cumulative acknowledgement
// position (nil without one); ok false when id holds nothing here.
func (pa *PendingAcks) TxnStats(id ID) (cumulative *Position, ok bool) {
	pa.mu.Lock()
	defer pa.mu.Unlock()
	t := pa.txns[id]
	if t == nil {
		return nil, false
	}
	if t.cumulative != nil {
		c := *t.cumulative
		return &c, true
	}
	return nil, true
}

// Name is the subscription's name.
func (pa *PendingAcks) Name() string { return pa.sub }
