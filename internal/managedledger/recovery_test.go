package managedledger

import (
	"errors"
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
	flushedLedger := c.p.ledger.ID()
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
	// The new owner claimed the cursor: its state is in metadata and the previous owner's
	// cursor ledger is gone.
	if e.lc.Exists(flushedLedger) {
		t.Fatalf("previous owner's cursor ledger %d not deleted", flushedLedger)
	}
	must(t, rc.Delete(ps[4]))
	must(t, rc.Flush(ctxT(t)))
}

// TestRestartRecoveryRandomized repeats crash/reopen cycles with random out-of-order acks
// and checks that the recovered cursor equals the cursor at its last flush.
func TestRestartRecoveryRandomized(t *testing.T) {
	e := newEnv(t)
	rng := rand.New(rand.NewPCG(7, 9))
	var all []Position
	for round := 0; round < soakRounds; round++ {
		f := e.factory()
		ml := open(t, f, "t/rand", func(c *Config) { c.MaxEntriesPerLedger = int64(3 + rng.IntN(5)) })
		if got := ml.NumberOfEntries(); got != int64(len(all)) {
			t.Fatalf("round %d: %d entries recovered, want %d", round, got, len(all))
		}
		c, err := ml.OpenCursor(ctxT(t), "s", InitialPositionEarliest)
		must(t, err)
		if round > 0 {
			// Either the flushed state, or (if a background flush ran before the crash)
			// the state after the one unflushed ack; nothing else.
			got := fmt.Sprint(c.MarkDeletePosition(), c.acked.String())
			flushed, later := fmt.Sprint(lastMD, lastRanges), fmt.Sprint(afterMD, afterRanges)
			if got != flushed && got != later {
				t.Fatalf("round %d: recovered %s, want %s or %s", round, got, flushed, later)
			}
		}
		all = append(all, addN(t, ml, 10+rng.IntN(10), fmt.Sprint("r", round))...)
		for i := 0; i < 15; i++ {
			must(t, c.Delete(all[rng.IntN(len(all))]))
		}
		must(t, c.Flush(ctxT(t)))
		lastMD, lastRanges = c.MarkDeletePosition(), c.acked.String()
		must(t, c.Delete(all[rng.IntN(len(all))])) // not flushed: may be lost
		afterMD, afterRanges = c.MarkDeletePosition(), c.acked.String()
		if rng.IntN(2) == 0 {
			crash(f)
		} else {
			must(t, f.Close(ctxT(t)))
			lastMD, lastRanges = afterMD, afterRanges // clean close persists everything
		}
	}
}

var (
	lastMD, afterMD         Position
	lastRanges, afterRanges string
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

// TestCursorClaimBeatsZombieOwner: after a takeover, the old owner (still running) flushes
// its cursor; that must fail as fenced, and the new owner's flushes keep working.
func TestCursorClaimBeatsZombieOwner(t *testing.T) {
	e := newEnv(t)
	f1 := e.factory()
	ml1 := open(t, f1, "t/zombie", nil)
	ps := addN(t, ml1, 10, "x")
	c1, err := ml1.OpenCursor(ctxT(t), "s", InitialPositionEarliest)
	must(t, err)
	must(t, c1.MarkDelete(ps[2]))
	must(t, c1.Flush(ctxT(t)))

	ml2 := open(t, e.factory(), "t/zombie", nil)
	c2, _ := ml2.Cursor("s")
	wantPos(t, "recovered", c2.MarkDeletePosition(), ps[2])

	must(t, c1.MarkDelete(ps[8]))
	if err := c1.Flush(ctxT(t)); !errors.Is(err, ErrFenced) {
		t.Fatalf("zombie flush = %v, want ErrFenced", err)
	}
	must(t, c2.MarkDelete(ps[5]))
	must(t, c2.Flush(ctxT(t)))
	ml3 := open(t, e.factory(), "t/zombie", nil)
	c3, _ := ml3.Cursor("s")
	wantPos(t, "after the zombie's flush", c3.MarkDeletePosition(), ps[5])
}

func TestCorruptMetadataIsAnErrorNotAPanic(t *testing.T) {
	e := newEnv(t)
	f := e.factory()
	_, err := e.store.Put(ctxT(t), f.mlKey("t/bad"), []byte("{not json"), 0)
	must(t, err)
	if _, err := f.Open(ctxT(t), "t/bad", f.DefaultConfig()); !errors.Is(err, ErrCorruptMetadata) {
		t.Fatalf("open with a corrupt ledger list: %v", err)
	}
	ml := open(t, f, "t/badcursor", nil)
	addN(t, ml, 2, "x")
	must(t, ml.Close(ctxT(t)))
	_, err = e.store.Put(ctxT(t), f.cursorKey("t/badcursor", "s"), []byte(`{"cursorsLedgerId":-1,"state":"AQ=="}`), 0)
	must(t, err)
	if _, err := f.Open(ctxT(t), "t/badcursor", f.DefaultConfig()); !errors.Is(err, ErrCorruptMetadata) {
		t.Fatalf("open with a corrupt cursor: %v", err)
	}
}
