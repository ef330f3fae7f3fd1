package managedledger

import (
	"errors"
	"testing"
)

// TestCursorBatchAcksSurviveCrashAndCleanClose: partial batch acknowledgements intersect,
// complete an entry once every member is acknowledged, and are recovered after a crash
// (from the cursor ledger) and after a clean close (from the metadata snapshot).
func TestCursorBatchAcksSurviveCrashAndCleanClose(t *testing.T) {
	e := newEnv(t)
	f1 := e.factory()
	ml := open(t, f1, "t/batch", nil)
	ps := addN(t, ml, 4, "b")
	c, err := ml.OpenCursor(ctxT(t), "sub", InitialPositionEarliest)
	must(t, err)
	// Entry 0: members 0..9; ack 2 and 5 (set bits = still unacknowledged).
	const all = uint64(1<<10 - 1)
	done, err := c.AckBatchIndexes(ps[0], []uint64{all &^ (1 << 2)})
	must(t, err)
	if done {
		t.Fatal("entry complete after one member")
	}
	if done, _ = c.AckBatchIndexes(ps[0], []uint64{all &^ (1 << 5)}); done {
		t.Fatal("entry complete after two members")
	}
	if got := c.BatchAckSet(ps[0]); len(got) != 1 || got[0] != all&^(1<<2|1<<5) {
		t.Fatalf("ack set %b", got)
	}
	// Entry 2: all members acknowledged in two steps -> the entry is deleted.
	_, err = c.AckBatchIndexes(ps[2], []uint64{0b1100})
	must(t, err)
	if done, _ = c.AckBatchIndexes(ps[2], []uint64{0b0011}); !done || !c.IsAcknowledged(ps[2]) || c.BatchAckSet(ps[2]) != nil {
		t.Fatalf("entry 2: done %v acked %v", done, c.IsAcknowledged(ps[2]))
	}
	if _, err := c.AckBatchIndexes(ps[1], make([]uint64, maxBatchAckWords+1)); !errors.Is(err, ErrInvalidPosition) {
		t.Fatalf("oversized ack set: %v", err)
	}
	must(t, c.Flush(ctxT(t)))
	crash(f1)

	f2 := e.factory()
	ml2 := open(t, f2, "t/batch", nil)
	rc, ok := ml2.Cursor("sub")
	if !ok {
		t.Fatal("cursor lost")
	}
	if got := rc.BatchAckSet(ps[0]); len(got) != 1 || got[0] != all&^(1<<2|1<<5) {
		t.Fatalf("recovered ack set %b", got)
	}
	if !rc.IsAcknowledged(ps[2]) || rc.IsAcknowledged(ps[0]) {
		t.Fatal("recovered acknowledgements wrong")
	}
	// Acking the entry as a whole forgets its bitset; a clean close persists the rest.
	_, err = rc.AckBatchIndexes(ps[3], []uint64{1})
	must(t, err)
	must(t, rc.Delete(ps[0]))
	if rc.BatchAckSet(ps[0]) != nil {
		t.Fatal("bitset kept after the entry was acknowledged")
	}
	must(t, f2.Close(ctxT(t)))
	ml3 := open(t, e.factory(), "t/batch", nil)
	c3, _ := ml3.Cursor("sub")
	if got := c3.BatchAckSet(ps[3]); len(got) != 1 || got[0] != 1 {
		t.Fatalf("after clean close ack set %b", got)
	}
	// A reset forgets partial acknowledgements along with the others.
	must(t, c3.ResetCursor(ctxT(t), Earliest))
	if c3.BatchAckSet(ps[3]) != nil {
		t.Fatal("bitset kept across a reset")
	}
}

func TestCursorStateBatchesRoundTrip(t *testing.T) {
	var rs RangeSet
	rs.Add(Position{3, 7})
	batches := map[Position][]uint64{{3, 5}: {0xf0}, {4, 1}: {1, 1 << 63}}
	st, err := decodeCursorState(encodeCursorStateBatches(Position{3, 2}, &rs, batches, 100))
	must(t, err)
	if len(st.BatchAcks) != 2 || st.BatchAcks[Position{4, 1}][1] != 1<<63 || st.Acked.Count() != 1 {
		t.Fatalf("decoded %+v", st)
	}
	st, err = decodeCursorState(encodeCursorStateBatches(Position{3, 2}, &rs, batches, 1))
	must(t, err)
	if len(st.BatchAcks) != 1 || st.BatchAcks[Position{3, 5}] == nil {
		t.Fatalf("capped %+v", st.BatchAcks)
	}
}
