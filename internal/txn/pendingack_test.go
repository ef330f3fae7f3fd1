package txn

import (
	"context"
	"sync"
	"testing"

	"github.com/magnetar-io/magnetar/internal/managedledger"
)

// cursorOps is SubscriptionOps over a real cursor, as the topic service provides it.
type cursorOps struct {
	c     *managedledger.Cursor
	batch int

	mu          sync.Mutex
	redelivered []Position
}

func (o *cursorOps) Acknowledged(p Position) bool  { return o.c.IsAcknowledged(p) }
func (o *cursorOps) Remaining(p Position) []uint64 { return o.c.BatchAckSet(p) }
func (o *cursorOps) BatchSize(Position) int        { return o.batch }
func (o *cursorOps) MarkDeletePosition() Position  { return o.c.MarkDeletePosition() }
func (o *cursorOps) Redeliver(ps []Position) {
	o.mu.Lock()
	o.redelivered = append(o.redelivered, ps...)
	o.mu.Unlock()
}
func (o *cursorOps) redeliveries() []Position {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]Position(nil), o.redelivered...)
}
func (o *cursorOps) Ack(acks []AckPos, cumulative bool) error {
	if cumulative {
		return o.c.MarkDelete(acks[0].Pos)
	}
	for _, a := range acks {
		if a.Bits == nil {
			if err := o.c.Delete(a.Pos); err != nil {
				return err
			}
			continue
		}
		if _, err := o.c.AckBatchIndexes(a.Pos, a.Bits); err != nil {
			return err
		}
	}
	return nil
}
func (o *cursorOps) Persisted(ctx context.Context, acks []AckPos, cumulative bool) (bool, error) {
	md := o.c.MarkDeletePosition()
	if err := o.c.Flush(ctx); err != nil {
		return false, err
	}
	for _, a := range acks {
		if md.Less(a.Pos) {
			return false, nil
		}
	}
	return true, nil
}

func (tp *topic) pending(t *testing.T, batch int) (*PendingAcks, *cursorOps) {
	t.Helper()
	ops := &cursorOps{c: tp.sub, batch: batch}
	if err := tp.st.Prepare(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	pa, err := tp.st.Subscription("sub", ops)
	if err != nil {
		t.Fatal(err)
	}
	return pa, ops
}

func whole(ps ...Position) []AckPos {
	var out []AckPos
	for _, p := range ps {
		out = append(out, AckPos{Pos: p})
	}
	return out
}

func TestPendingAcksHoldConflictAndCommit(t *testing.T) {
	cl := newCluster(t)
	tp := openTopic(t, cl, nil)
	ctx := ctxT(t)
	ps := []Position{tp.mustPublish(nil), tp.mustPublish(nil), tp.mustPublish(nil)}
	pa, ops := tp.pending(t, 0)
	t1, t2 := ID{1, 1}, ID{1, 2}

	if err := pa.Ack(ctx, t1, whole(ps[0], ps[1]), false); err != nil {
		t.Fatal(err)
	}
	if err := pa.Ack(ctx, t1, whole(ps[0]), false); err != nil {
		t.Fatalf("the same transaction again: %v", err)
	}
	if err := pa.Ack(ctx, t2, whole(ps[1]), false); !isErr(err, ErrConflict) {
		t.Fatalf("another transaction on a held entry: %v", err)
	}
	if held, _ := pa.Pending(ps[0]); !held {
		t.Fatal("a held entry is not pending")
	}
	if tp.sub.IsAcknowledged(ps[0]) {
		t.Fatal("held acknowledgement applied before the commit")
	}
	if err := pa.Ack(ctx, t2, whole(ps[2]), false); err != nil {
		t.Fatal(err)
	}
	if err := pa.End(ctx, t1, Commit, 0); err != nil {
		t.Fatal(err)
	}
	if !tp.sub.IsAcknowledged(ps[0]) || !tp.sub.IsAcknowledged(ps[1]) {
		t.Fatal("commit did not acknowledge")
	}
	if held, _ := pa.Pending(ps[0]); held {
		t.Fatal("still held after the commit")
	}
	if err := pa.Ack(ctx, t2, whole(ps[0]), false); !isErr(err, ErrConflict) {
		t.Fatalf("acknowledging what is acknowledged: %v", err)
	}
	if err := pa.End(ctx, t2, Abort, 0); err != nil {
		t.Fatal(err)
	}
	if tp.sub.IsAcknowledged(ps[2]) {
		t.Fatal("an aborted acknowledgement was applied")
	}
	if r := ops.redeliveries(); len(r) != 1 || r[0] != ps[2] {
		t.Fatalf("redelivered %v, want %v", r, ps[2])
	}
	if err := pa.End(ctx, t2, Abort, 0); err != nil {
		t.Fatalf("abort again: %v", err)
	}
	if st := pa.Stats(); st.Ongoing != 0 || st.Committed != 1 || st.Aborted != 1 {
		t.Fatalf("stats %+v", st)
	}
}

func TestPendingAcksBatchMembers(t *testing.T) {
	cl := newCluster(t)
	tp := openTopic(t, cl, nil)
	ctx := ctxT(t)
	p := tp.mustPublish(nil)
	pa, _ := tp.pending(t, 4)
	t1, t2 := ID{1, 1}, ID{1, 2}
	// ack_set bits set = not acknowledged by the request.
	if err := pa.Ack(ctx, t1, []AckPos{{Pos: p, Bits: []uint64{0b1100}}}, false); err != nil { // members 0, 1
		t.Fatal(err)
	}
	if err := pa.Ack(ctx, t2, []AckPos{{Pos: p, Bits: []uint64{0b1011}}}, false); err != nil { // member 2
		t.Fatal(err)
	}
	if err := pa.Ack(ctx, t2, []AckPos{{Pos: p, Bits: []uint64{0b1101}}}, false); !isErr(err, ErrConflict) { // member 1
		t.Fatalf("overlapping members: %v", err)
	}
	if held, bits := pa.Pending(p); held || len(bits) != 1 || bits[0] != 0b0111 {
		t.Fatalf("pending %v %b", held, bits)
	}
	if err := pa.End(ctx, t1, Commit, 0); err != nil {
		t.Fatal(err)
	}
	if rem := tp.sub.BatchAckSet(p); len(rem) != 1 || rem[0] != 0b1100 {
		t.Fatalf("remaining after t1's commit %b", rem)
	}
	// t1's members are acknowledged now: another transaction acknowledging only them conflicts.
	if err := pa.Ack(ctx, ID{1, 3}, []AckPos{{Pos: p, Bits: []uint64{0b1110}}}, false); !isErr(err, ErrConflict) {
		t.Fatalf("acknowledging acknowledged members: %v", err)
	}
	if err := pa.End(ctx, t2, Commit, 0); err != nil {
		t.Fatal(err)
	}
	if rem := tp.sub.BatchAckSet(p); len(rem) != 1 || rem[0] != 0b1000 {
		t.Fatalf("remaining after t2's commit %b", rem)
	}
}

func TestPendingAcksCumulative(t *testing.T) {
	cl := newCluster(t)
	tp := openTopic(t, cl, nil)
	ctx := ctxT(t)
	var ps []Position
	for i := 0; i < 6; i++ {
		ps = append(ps, tp.mustPublish(nil))
	}
	pa, _ := tp.pending(t, 0)
	t1, t2 := ID{1, 1}, ID{1, 2}
	if err := pa.Ack(ctx, t1, whole(ps[3]), true); err != nil {
		t.Fatal(err)
	}
	if err := pa.Ack(ctx, t2, whole(ps[1]), false); !isErr(err, ErrConflict) {
		t.Fatalf("individual under another's cumulative: %v", err)
	}
	if err := pa.Ack(ctx, t2, whole(ps[5]), true); !isErr(err, ErrConflict) {
		t.Fatalf("second cumulative holder: %v", err)
	}
	if err := pa.Ack(ctx, t2, whole(ps[4]), false); err != nil {
		t.Fatal(err)
	}
	if held, _ := pa.Pending(ps[2]); !held {
		t.Fatal("entry under the cumulative acknowledgement not held")
	}
	if err := pa.End(ctx, t1, Commit, 0); err != nil {
		t.Fatal(err)
	}
	if md := tp.sub.MarkDeletePosition(); md != ps[3] {
		t.Fatalf("mark-delete %v, want %v", md, ps[3])
	}
	if err := pa.Ack(ctx, ID{1, 3}, whole(ps[2]), true); !isErr(err, ErrConflict) {
		t.Fatalf("cumulative before the mark-delete position: %v", err)
	}
	if err := pa.Ack(ctx, t1, whole(ps[5]), false); !isErr(err, ErrNotAllowed) && err != nil {
		t.Fatalf("ended transaction: %v", err)
	}
}

// TestPendingAcksRecovery: held acknowledgements come back on a new owner; a commit logged
// but not yet persisted by the subscription is applied again.
func TestPendingAcksRecovery(t *testing.T) {
	cl := newCluster(t)
	tp := openTopic(t, cl, nil)
	ctx := ctxT(t)
	var ps []Position
	for i := 0; i < 4; i++ {
		ps = append(ps, tp.mustPublish(nil))
	}
	pa, _ := tp.pending(t, 0)
	open, committed, aborted := ID{1, 1}, ID{1, 2}, ID{1, 3}
	for _, c := range []struct {
		id ID
		p  Position
	}{{open, ps[1]}, {committed, ps[2]}, {aborted, ps[3]}} {
		if err := pa.Ack(ctx, c.id, whole(c.p), false); err != nil {
			t.Fatal(err)
		}
	}
	if err := pa.End(ctx, committed, Commit, 0); err != nil {
		t.Fatal(err)
	}
	if err := pa.End(ctx, aborted, Abort, 0); err != nil {
		t.Fatal(err)
	}
	// The new owner's cursor state predates the commit: the first topic never flushed
	// (its state is what the cursor persisted at open).
	tp2 := openTopic(t, cl, nil)
	pa2, _ := tp2.pending(t, 0)
	if err := pa2.Ack(ctx, ID{1, 9}, whole(ps[1]), false); !isErr(err, ErrConflict) {
		t.Fatalf("an entry held before the restart: %v", err)
	}
	if !tp2.sub.IsAcknowledged(ps[2]) {
		t.Fatal("the logged commit was not applied again")
	}
	if tp2.sub.IsAcknowledged(ps[3]) {
		t.Fatal("the aborted acknowledgement came back")
	}
	if err := pa2.End(ctx, open, Commit, 0); err != nil {
		t.Fatal(err)
	}
	if !tp2.sub.IsAcknowledged(ps[1]) {
		t.Fatal("commit after the restart did not acknowledge")
	}
	// Records of committed transactions go once the subscription persisted them.
	if err := tp2.sub.MarkDelete(ps[3]); err != nil {
		t.Fatal(err)
	}
	l := tp2.st.logv.Load()
	eventually(t, "committed records to be dropped", func() bool {
		// Only the buffer's snapshot is left.
		return l.cur.Backlog() == 1
	})
}

func TestPendingAcksConcurrentConflicts(t *testing.T) {
	cl := newCluster(t)
	tp := openTopic(t, cl, nil)
	ctx := ctxT(t)
	p := tp.mustPublish(nil)
	pa, _ := tp.pending(t, 0)
	var wg sync.WaitGroup
	var mu sync.Mutex
	won := 0
	for i := 0; i < 16; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			if err := pa.Ack(ctx, ID{1, uint64(i + 1)}, whole(p), false); err == nil {
				mu.Lock()
				won++
				mu.Unlock()
			} else if !isErr(err, ErrConflict) {
				t.Error(err)
			}
		}(i)
	}
	wg.Wait()
	if won != 1 {
		t.Fatalf("%d transactions hold the same entry", won)
	}
}
