package managedledger

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// TestRestartRecoveryAfterCrash: a broker dies without any clean shutdown (nothing flushed
// or closed after the last explicit flush); a new broker on the same bookies and metadata
// recovers the ledger list, every acknowledged entry, and the cursors with their
// out-of-order acks as of the last flush.
func TestRestartRecoveryAfterCrash(t *testing.T) {
	e := newEnv(t)
	f1 := e.factory()
	ml := open(t, f1, "t/crash", func(c *Config) { c.MaxEntriesPerLedger = 5 })
	ps := addN(t, ml, 23, "x")
	c, err := ml.OpenCursor(ctxT(t), "sub", InitialPositionEarliest)
	must(t, err)
	c2, err := ml.OpenCursor(ctxT(t), "other", InitialPositionEarliest)
	must(t, err)
	must(t, c.MarkDelete(ps[3]))
	must(t, c.Delete(ps[6], ps[7], ps[11], ps[15], ps[14], ps[22]))
	must(t, c.Flush(ctxT(t)))
	must(t, c.Flush(ctxT(t))) // a second flush appends to the cursor ledger without a snapshot change
	must(t, c2.Delete(ps[0], ps[2]))
	must(t, c2.Flush(ctxT(t)))
	wantRanges := c.acked.String()
	wantMD := c.MarkDeletePosition()
	// Acks after the last flush may be lost (redelivered) but never the other way round.
	crash(f1)

	f2 := e.factory()
	ml2 := open(t, f2, "t/crash", nil)
	if got := ml2.NumberOfEntries(); got != 23 {
		t.Fatalf("entries after recovery %d", got)
	}
	rc, ok := ml2.Cursor("sub")
	if !ok {
		t.Fatal("cursor lost")
	}
	wantPos(t, "recovered mark-delete", rc.MarkDeletePosition(), wantMD)
	if got := rc.acked.String(); got != wantRanges {
		t.Fatalf("recovered ranges %s, want %s", got, wantRanges)
	}
	if rc.Backlog() != 23-4-6 {
		t.Fatalf("recovered backlog %d", rc.Backlog())
	}
	rc2, _ := ml2.Cursor("other")
	wantPos(t, "other cursor", rc2.MarkDeletePosition(), ps[0])
	if rc2.acked.String() != fmt.Sprintf("[(%d:1..%d:2]]", ps[2].LedgerID, ps[2].LedgerID) {
		t.Fatalf("other cursor ranges %s", rc2.acked.String())
	}
	// Every unacknowledged entry is delivered, in order, with its data.
	var got []string
	for _, en := range readAll(t, rc) {
		got = append(got, string(en.Data))
	}
	want := []string{}
	for i := 4; i < 23; i++ {
		switch i {
		case 6, 7, 11, 14, 15, 22:
			continue
		}
		want = append(want, fmt.Sprintf("x-%d", i))
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("redelivered %v, want %v", got, want)
	}
	// The new owner keeps writing after the recovered entries.
	p, err := ml2.Add(ctxT(t), []byte("after"))
	must(t, err)
	if !ps[22].Less(p) {
		t.Fatalf("new add at %v not after %v", p, ps[22])
	}
	// The old cursor ledger is replaced at the next flush and then deleted.
	oldCursorLedger := rc.p.recoveredLedgerID
	must(t, rc.Delete(ps[4]))
	must(t, rc.Flush(ctxT(t)))
	if oldCursorLedger >= 0 && e.lc.Exists(oldCursorLedger) {
		t.Fatalf("previous owner's cursor ledger %d not deleted", oldCursorLedger)
	}
}

// TestRestartRecoveryRandomized repeats crash/reopen cycles with random out-of-order acks
// and checks that the recovered cursor equals the cursor at its last flush.
func TestRestartRecoveryRandomized(t *testing.T) {
	e := newEnv(t)
	rng := rand.New(rand.NewPCG(7, 9))
	var all []Position
	for round := 0; round < 6; round++ {
		f := e.factory()
		ml := open(t, f, "t/rand", func(c *Config) { c.MaxEntriesPerLedger = int64(3 + rng.IntN(5)) })
		if got := ml.NumberOfEntries(); got != int64(len(all)) {
			t.Fatalf("round %d: %d entries recovered, want %d", round, got, len(all))
		}
		c, err := ml.OpenCursor(ctxT(t), "s", InitialPositionEarliest)
		must(t, err)
		if round > 0 {
			wantPos(t, "recovered mark-delete", c.MarkDeletePosition(), lastMD)
			if c.acked.String() != lastRanges {
				t.Fatalf("round %d: ranges %s, want %s", round, c.acked.String(), lastRanges)
			}
		}
		all = append(all, addN(t, ml, 10+rng.IntN(10), fmt.Sprint("r", round))...)
		for i := 0; i < 15; i++ {
			must(t, c.Delete(all[rng.IntN(len(all))]))
		}
		must(t, c.Flush(ctxT(t)))
		lastMD, lastRanges = c.MarkDeletePosition(), c.acked.String()
		must(t, c.Delete(all[rng.IntN(len(all))])) // not flushed: may be lost
		if rng.IntN(2) == 0 {
			crash(f)
		} else {
			must(t, f.Close(ctxT(t)))
			lastMD, lastRanges = c.MarkDeletePosition(), c.acked.String() // clean close persists everything
		}
	}
}

var (
	lastMD     Position
	lastRanges string
)

func TestCleanCloseReopen(t *testing.T) {
	e := newEnv(t)
	f := e.factory()
	ml := open(t, f, "t/clean", func(c *Config) { c.MaxEntriesPerLedger = 4 })
	ps := addN(t, ml, 9, "x")
	c, err := ml.OpenCursor(ctxT(t), "s", InitialPositionEarliest)
	must(t, err)
	must(t, c.Delete(ps[1], ps[5]))
	sizeBefore := ml.TotalSize()
	must(t, f.Close(ctxT(t)))
	// A clean close keeps no cursor ledger around.
	ml2 := open(t, e.factory(), "t/clean", nil)
	c2, _ := ml2.Cursor("s")
	if c2.acked.String() != c.acked.String() || c2.p.recoveredLedgerID != -1 {
		t.Fatalf("after clean close: ranges %s ledger %d", c2.acked.String(), c2.p.recoveredLedgerID)
	}
	if ml2.TotalSize() != sizeBefore {
		t.Fatalf("size after clean reopen %d, want exact %d", ml2.TotalSize(), sizeBefore)
	}
	// Each open makes a fresh ledger and drops the empty one the last owner left.
	if n := len(ml2.LedgerIDs()); n != 4 {
		t.Fatalf("ledgers after reopen %v", ml2.LedgerIDs())
	}
}
