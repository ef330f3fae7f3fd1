package managedledger

import (
	"bytes"
	"fmt"
	"strconv"
	"testing"
)

// Search (the offset -> position lookup of the Kafka front end and reset-by-time) over a
// log spread across ledgers, and TrimBefore (DeleteRecords).

func TestSearchAcrossLedgersAndTrimBefore(t *testing.T) {
	e := newEnv(t)
	ml := open(t, e.factory(), "t/search", func(c *Config) { c.MaxEntriesPerLedger = 3; c.RetentionTime = -1 })
	c, err := ml.OpenCursor(ctxT(t), "s", InitialPositionEarliest)
	must(t, err)
	var ps []Position
	for i := 0; i < 10; i++ {
		p, err := ml.Add(ctxT(t), []byte(fmt.Sprintf("%03d", i*10))) // keys 0, 10, ..., 90
		must(t, err)
		ps = append(ps, p)
	}
	waitFor(t, "rollovers", func() bool { return len(ml.LedgerIDs()) >= 4 })
	key := func(d []byte) int { n, _ := strconv.Atoi(string(bytes.TrimSpace(d))); return n }
	find := func(k int) Position {
		t.Helper()
		p, err := ml.Search(ctxT(t), func(d []byte) (bool, error) { return key(d) >= k, nil })
		must(t, err)
		return p
	}
	for i := 0; i < 10; i++ {
		wantPos(t, fmt.Sprintf("search %d", i*10), find(i*10), ps[i])
		wantPos(t, fmt.Sprintf("search %d", i*10-5), find(i*10-5), ps[i])
	}
	end := find(1000)
	if end.LedgerID != ps[9].LedgerID || end.EntryID != ps[9].EntryID+1 {
		t.Fatalf("search past the end = %v, want the end position after %v", end, ps[9])
	}
	// A match error stops the search.
	if _, err := ml.Search(ctxT(t), func([]byte) (bool, error) { return false, fmt.Errorf("boom") }); err == nil {
		t.Fatal("match error ignored")
	}

	// TrimBefore ignores retention (infinite here) and the cursor (at the start) and keeps
	// the ledger of the position.
	must(t, ml.Retention().TrimBefore(ctxT(t), ps[7]))
	ids := ml.LedgerIDs()
	if ids[0] != ps[7].LedgerID {
		t.Fatalf("after TrimBefore(%v) ledgers are %v", ps[7], ids)
	}
	wantPos(t, "first position", ml.FirstPosition(), Position{ps[7].LedgerID, 0})
	wantPos(t, "search after the trim", find(0), Position{ps[7].LedgerID, 0})
	// The cursor left behind reads what is left.
	c.Rewind()
	es := readAll(t, c)
	if len(es) == 0 || es[0].Position != (Position{ps[7].LedgerID, 0}) {
		t.Fatalf("cursor read %d entries from %v after the trim", len(es), es)
	}
	// The current ledger is never removed.
	must(t, ml.Retention().TrimBefore(ctxT(t), Latest))
	if len(ml.LedgerIDs()) != 1 {
		t.Fatalf("ledgers %v", ml.LedgerIDs())
	}
}
