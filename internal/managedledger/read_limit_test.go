package managedledger

import (
	"context"
	"testing"
	"time"
)

func TestReadLimitHidesEntriesAndWakesReaders(t *testing.T) {
	e := newEnv(t)
	f := e.factory()
	ml := open(t, f, "t/n/persistent/limit", nil)
	ps := addN(t, ml, 5, "m")
	c, err := ml.OpenCursor(ctxT(t), "sub", InitialPositionEarliest)
	if err != nil {
		t.Fatal(err)
	}
	ml.SetReadLimit(ps[2], true) // entries 0 and 1 visible
	if got := readAll(t, c); len(got) != 2 || got[1].Position != ps[1] {
		t.Fatalf("read %v under limit %v", got, ps[2])
	}
	if c.HasMoreEntries() {
		t.Fatal("HasMoreEntries sees past the limit")
	}
	r, err := ml.NewUnlimitedReader(Earliest, false)
	if err != nil {
		t.Fatal(err)
	}
	if got := readAll(t, r); len(got) != 5 {
		t.Fatalf("unlimited reader read %d entries, want 5", len(got))
	}
	// A read waiting at the limit wakes when it moves.
	got := make(chan []Entry, 1)
	go func() {
		es, _ := c.ReadEntriesOrWait(ctxT(t), 10, 0)
		got <- es
	}()
	select {
	case es := <-got:
		t.Fatalf("read past the limit: %v", es)
	case <-time.After(50 * time.Millisecond):
	}
	ml.SetReadLimit(Position{ps[3].LedgerID, ps[3].EntryID + 1}, true)
	if es := <-got; len(es) != 2 || es[0].Position != ps[2] {
		t.Fatalf("woken read %v", es)
	}
	ml.SetReadLimit(Position{}, false)
	if got := readAll(t, c); len(got) != 1 || got[0].Position != ps[4] {
		t.Fatalf("after lifting: %v", got)
	}
	if lim, on := ml.ReadLimit(); on {
		t.Fatalf("limit still %v", lim)
	}
}

func TestFactoryExists(t *testing.T) {
	e := newEnv(t)
	f := e.factory()
	ctx := context.Background()
	if ok, err := f.Exists(ctx, "t/n/persistent/x"); ok || err != nil {
		t.Fatalf("before: %v %v", ok, err)
	}
	open(t, f, "t/n/persistent/x", nil)
	if ok, err := f.Exists(ctx, "t/n/persistent/x"); !ok || err != nil {
		t.Fatalf("open here: %v %v", ok, err)
	}
	if ok, err := e.factory().Exists(ctx, "t/n/persistent/x"); !ok || err != nil {
		t.Fatalf("from another factory: %v %v", ok, err)
	}
}
