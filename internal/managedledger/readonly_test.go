package managedledger

import (
	"errors"
	"fmt"
	"testing"
)

// snapshotRead reads every entry a snapshot sees, ledger by ledger.
func snapshotRead(t *testing.T, s *Snapshot) []string {
	t.Helper()
	var out []string
	for _, l := range s.Ledgers() {
		if l.Entries == 0 {
			continue
		}
		es, err := s.Read(ctxT(t), l.ID, 0, l.Entries-1)
		must(t, err)
		for _, e := range es {
			out = append(out, string(e.Data))
		}
	}
	return out
}

func TestSnapshotOfAnOpenLogSeesEveryConfirmedEntry(t *testing.T) {
	e := newEnv(t)
	f := e.factory()
	ml := open(t, f, "t/snap", func(c *Config) { c.MaxEntriesPerLedger = 4 })
	addN(t, ml, 10, "m")
	s, err := f.OpenSnapshot(ctxT(t), "t/snap")
	must(t, err)
	defer s.Close()
	addN(t, ml, 3, "later") // after the snapshot: not seen
	got := snapshotRead(t, s)
	if len(got) != 10 || got[0] != "m-0" || got[9] != "m-9" {
		t.Fatalf("snapshot read %v", got)
	}
	if lc := s.LastConfirmed(); lc.EntryID < 0 {
		t.Fatalf("last confirmed %v", lc)
	}
	// The snapshot holds nothing back: no cursor was registered.
	if n := len(ml.Cursors()); n != 0 {
		t.Fatalf("%d cursors after a snapshot", n)
	}
	if _, err := s.Read(ctxT(t), s.Ledgers()[0].ID, 0, 99); !errors.Is(err, ErrInvalidPosition) {
		t.Fatalf("read past the snapshot: %v", err)
	}
}

func TestSnapshotFromAnotherProcessDoesNotFence(t *testing.T) {
	e := newEnv(t)
	owner := e.factory()
	ml := open(t, owner, "t/ro", func(c *Config) { c.MaxEntriesPerLedger = 3 })
	addN(t, ml, 7, "x")
	other := e.factory() // the SQL worker: same bookies and metadata, its own factory
	s, err := other.OpenSnapshot(ctxT(t), "t/ro")
	must(t, err)
	got := snapshotRead(t, s)
	must(t, s.Close())
	// The bookies' LAC of the open ledger may lag by the last entry; every closed ledger is whole.
	if len(got) < 6 || got[0] != "x-0" {
		t.Fatalf("read %v", got)
	}
	for i, g := range got {
		if g != fmt.Sprintf("x-%d", i) {
			t.Fatalf("entry %d is %q", i, g)
		}
	}
	// The owner still writes: nothing was fenced.
	addN(t, ml, 2, "y")
	if _, err := other.OpenSnapshot(ctxT(t), "t/missing"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("missing log: %v", err)
	}
}
