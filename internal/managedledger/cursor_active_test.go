package managedledger

import (
	"errors"
	"fmt"
	"testing"
	"time"
)

// checkEntries fails unless es are exactly the entries at ps with data prefix-i, in order,
// where i counts from first.
func checkEntries(t *testing.T, what string, es []Entry, ps []Position, prefix string, first int) {
	t.Helper()
	if len(es) != len(ps) {
		t.Fatalf("%s: read %d entries, want %d", what, len(es), len(ps))
	}
	for i, e := range es {
		if want := fmt.Sprintf("%s-%d", prefix, first+i); e.Position != ps[i] || string(e.Data) != want {
			t.Fatalf("%s: entry %d is %v %q, want %v %q", what, i, e.Position, e.Data, ps[i], want)
		}
	}
}

// A subscription without a consumer (the W7 fill phase): adds are not cached, and a consumer
// connecting later still reads every entry, across rollovers and the newest entries the
// bookies do not know to be confirmed yet (the tail).
func TestNoActiveCursorSkipsCacheOnAdd(t *testing.T) {
	e := newEnv(t)
	f := e.factory()
	ml := open(t, f, "t/inactive", func(c *Config) { c.MaxEntriesPerLedger = 4 })
	c, err := ml.OpenCursor(ctxT(t), "s", InitialPositionLatest)
	must(t, err)
	if c.IsActive() || ml.hasActiveCursors() {
		t.Fatal("a durable cursor is active before any consumer attached")
	}
	ps := addN(t, ml, 15, "m")
	if st := f.CacheStats(); st.Entries != 0 || st.SizeBytes != 0 {
		t.Fatalf("adds without an active cursor were cached: %+v", st)
	}
	c.SetActive()
	if !c.IsActive() {
		t.Fatal("SetActive on a caught-up cursor left it inactive")
	}
	checkEntries(t, "late consumer", readAll(t, c), ps, "m", 0)
}

// With an active cursor adds are cached and its reads hit the cache; once it is set inactive
// new adds are not cached any more.
func TestActiveCursorCaches(t *testing.T) {
	e := newEnv(t)
	f := e.factory()
	ml := open(t, f, "t/active", nil)
	c := activeCursor(t, ml, "s")
	ps := addN(t, ml, 10, "a")
	if st := f.CacheStats(); st.Entries != 10 {
		t.Fatalf("active cursor, cache %+v", st)
	}
	checkEntries(t, "active read", readAll(t, c), ps, "a", 0)
	if st := f.CacheStats(); st.Misses != 0 || st.Hits != 10 {
		t.Fatalf("active cursor's reads missed the cache: %+v", st)
	}
	c.SetInactive()
	if c.IsActive() || ml.hasActiveCursors() {
		t.Fatal("SetInactive left the cursor active")
	}
	addN(t, ml, 5, "b")
	if st := f.CacheStats(); st.Entries != 0 {
		t.Fatalf("adds after SetInactive were cached: %+v", st)
	}
	if n := len(readAll(t, c)); n != 5 {
		t.Fatalf("inactive cursor read %d of 5", n)
	}
}

// A cursor further behind than the threshold is deactivated on the next cursor read (or
// the periodic check), no longer holds eviction back, and is reactivated once it catches up.
func TestBackloggedCursorIgnoredByEviction(t *testing.T) {
	e := newEnv(t)
	f := e.factory()
	ml := open(t, f, "t/backlogged", func(c *Config) { c.CursorBackloggedThreshold = 5 })
	fast, err := ml.OpenCursor(ctxT(t), "fast", InitialPositionLatest)
	must(t, err)
	slow, err := ml.OpenCursor(ctxT(t), "slow", InitialPositionLatest)
	must(t, err)
	fast.SetActive()
	slow.SetActive()
	ps := addN(t, ml, 20, "x")
	if st := f.CacheStats(); st.Entries != 20 {
		t.Fatalf("two active cursors, cache %+v", st)
	}
	checkEntries(t, "fast", readAll(t, fast), ps, "x", 0)
	// slow is 20 entries behind (> 5): it does not hold the cache any more.
	if slow.IsActive() || !fast.IsActive() {
		t.Fatalf("slow active=%v fast active=%v after fast read ahead", slow.IsActive(), fast.IsActive())
	}
	if st := f.CacheStats(); st.Entries != 0 {
		t.Fatalf("backlogged cursor held eviction back: %+v", st)
	}
	// slow catches up to within the threshold and is active again.
	es, err := slow.ReadEntries(ctxT(t), 16, 0)
	must(t, err)
	checkEntries(t, "slow catch-up", es, ps[:16], "x", 0)
	if !slow.IsActive() {
		t.Fatal("slow stayed inactive after catching up to 4 behind")
	}
	// Now it holds the cache again: what fast read stays for slow (one more add leaves it
	// 5 behind, still within the threshold).
	more := addN(t, ml, 1, "y")
	readAll(t, fast)
	for _, p := range more {
		if _, ok := f.cache.get(p); !ok {
			t.Fatalf("entry %v evicted while the reactivated slow cursor has not read it", p)
		}
	}
	es = readAll(t, slow)
	if len(es) != 5 {
		t.Fatalf("slow read %d of the last 5", len(es))
	}

	// A consumer that stalls while the producer runs on is caught by the periodic check
	// (no cursor reads happen meanwhile), and adds stop being cached.
	addN(t, ml, 10, "z")
	ml.checkBackloggedCursors()
	if fast.IsActive() || slow.IsActive() || ml.hasActiveCursors() {
		t.Fatal("periodic check left cursors 10 entries behind active")
	}
	before := f.CacheStats().Entries
	addN(t, ml, 3, "w")
	if st := f.CacheStats(); st.Entries != before {
		t.Fatalf("adds cached with every cursor backlogged: %d -> %+v", before, st)
	}
	// Reading up to the end makes both active again.
	ml.checkBackloggedCursors()
	readAll(t, fast)
	readAll(t, slow)
	if !fast.IsActive() || !slow.IsActive() {
		t.Fatal("cursors at the end stayed inactive")
	}
}

// A backlogged cursor that is the only attached one keeps its own read-ahead in the cache
// (the drain phase of W7: catch-up reads must not read every entry twice).
func TestBackloggedCursorKeepsItsReadAhead(t *testing.T) {
	e := newEnv(t)
	f := e.factory()
	ml := open(t, f, "t/drain", func(c *Config) {
		c.CursorBackloggedThreshold = 5
		c.ReadAheadEntries = 20
	})
	c, err := ml.OpenCursor(ctxT(t), "s", InitialPositionLatest)
	must(t, err)
	ps := addN(t, ml, 50, "d")
	c.SetActive()
	if c.IsActive() {
		t.Fatal("cursor 50 entries behind is active with threshold 5")
	}
	es, err := c.ReadEntries(ctxT(t), 5, 0)
	must(t, err)
	checkEntries(t, "first read", es, ps[:5], "d", 0)
	before := f.CacheStats()
	es, err = c.ReadEntries(ctxT(t), 10, 0)
	must(t, err)
	after := f.CacheStats()
	if len(es) != 10 || after.Misses != before.Misses || after.Hits-before.Hits != 10 {
		t.Fatalf("read-ahead of a backlogged cursor was evicted: before %+v after %+v", before, after)
	}
	rest := readAll(t, c)
	checkEntries(t, "drain", append(append([]Entry{}, es...), rest...), ps[5:], "d", 5)
	// Once its consumer leaves, nothing holds the cache.
	c.SetInactive()
	ml.evictConsumed()
	if st := f.CacheStats(); st.Entries != 0 {
		t.Fatalf("no attached cursor, cache %+v", st)
	}
}

// Readers (non-durable cursors) are active while open; closing or deleting cursors takes
// them out of the count.
func TestReadersAreActive(t *testing.T) {
	e := newEnv(t)
	f := e.factory()
	ml := open(t, f, "t/readers", nil)
	r, err := ml.NewNonDurableCursor(Latest, false)
	must(t, err)
	if !r.IsActive() || !ml.hasActiveCursors() {
		t.Fatal("a new reader is not active")
	}
	ps := addN(t, ml, 4, "r")
	if st := f.CacheStats(); st.Entries != 4 {
		t.Fatalf("reader open, cache %+v", st)
	}
	checkEntries(t, "reader", readAll(t, r), ps, "r", 0)
	must(t, r.Close(ctxT(t)))
	r.SetActive() // a no-op on a closed cursor
	if r.IsActive() || ml.hasActiveCursors() {
		t.Fatal("closed reader still counted")
	}
	activeCursor(t, ml, "d")
	must(t, ml.DeleteCursor(ctxT(t), "d"))
	if ml.hasActiveCursors() {
		t.Fatal("deleted cursor still counted")
	}
}

func TestBackloggedThresholdConfig(t *testing.T) {
	e := newEnv(t)
	f := e.factory()
	cfg := f.DefaultConfig()
	if cfg.CursorBackloggedThreshold != 1000 {
		t.Fatalf("default threshold %d, want 1000", cfg.CursorBackloggedThreshold)
	}
	cfg.CursorBackloggedThreshold = -1
	if err := cfg.Validate(); !errors.Is(err, ErrBadConfig) {
		t.Fatalf("negative threshold: %v", err)
	}
	// 0 never deactivates a cursor for its backlog.
	ml := open(t, f, "t/nothreshold", func(c *Config) { c.CursorBackloggedThreshold = 0 })
	c, err := ml.OpenCursor(ctxT(t), "s", InitialPositionLatest)
	must(t, err)
	addN(t, ml, 30, "n")
	c.SetActive()
	ml.checkBackloggedCursors()
	if !c.IsActive() {
		t.Fatal("threshold 0 deactivated a cursor")
	}
}

// Reads are bounded by estimated bytes: a cursor read stops at MaxReadSizeBytes (returning at
// least one entry) and a catch-up read's read-ahead only fills what is left of it.
func TestReadSizeBound(t *testing.T) {
	e := newEnv(t)
	f := e.factory()
	ml := open(t, f, "t/readsize", func(c *Config) {
		c.MaxReadSizeBytes = 35 << 10
		c.ReadAheadEntries = 100
	})
	c := activeCursor(t, ml, "s")
	entry := make([]byte, 10<<10)
	var ps []Position
	for i := 0; i < 20; i++ {
		p, err := ml.Add(ctxT(t), entry)
		must(t, err)
		ps = append(ps, p)
	}
	es, err := c.ReadEntries(ctxT(t), 100, 0)
	must(t, err)
	if len(es) != 3 || es[0].Position != ps[0] {
		t.Fatalf("read of 10 KiB entries under a 35 KiB bound returned %d entries from %v", len(es), es[0].Position)
	}
	// A catch-up read from the ledger: 3 entries asked, room for no more read-ahead than
	// fits (35 KiB / 10 KiB = 3 in all).
	e.clock.Advance(time.Hour)
	f.EvictCache()
	es, err = c.ReadEntries(ctxT(t), 100, 0)
	must(t, err)
	if len(es) != 3 || es[0].Position != ps[3] {
		t.Fatalf("second read: %d entries", len(es))
	}
	if st := f.CacheStats(); st.Entries > 3 {
		t.Fatalf("read-ahead beyond the byte bound: %+v", st)
	}
	// One entry larger than the bound is still read, alone.
	big := make([]byte, 50<<10)
	_, err = ml.Add(ctxT(t), big)
	must(t, err)
	got := 3 + 3
	for got < 21 {
		es, err := c.ReadEntries(ctxT(t), 100, 0)
		must(t, err)
		if len(es) == 0 {
			t.Fatalf("read stopped at %d of 21", got)
		}
		got += len(es)
	}
	// Without a bound the whole batch is read.
	cfg := ml.Config()
	cfg.MaxReadSizeBytes = 0
	must(t, ml.SetConfig(cfg))
	c.Rewind()
	if es, err := c.ReadEntries(ctxT(t), 100, 0); err != nil || len(es) != 21 {
		t.Fatalf("unbounded read: %d entries, %v", len(es), err)
	}
}

// A reader opened far behind the end is backlogged from the start.
func TestReaderFarBehindStartsInactive(t *testing.T) {
	e := newEnv(t)
	f := e.factory()
	ml := open(t, f, "t/farreader", func(c *Config) { c.CursorBackloggedThreshold = 5 })
	addN(t, ml, 10, "f")
	r, err := ml.NewNonDurableCursor(Earliest, false)
	must(t, err)
	if r.IsActive() || ml.hasActiveCursors() {
		t.Fatal("reader 10 entries behind with threshold 5 is active")
	}
	if n := len(readAll(t, r)); n != 10 {
		t.Fatalf("reader read %d of 10", n)
	}
	if !r.IsActive() {
		t.Fatal("reader at the end is not active")
	}
	must(t, r.Close(ctxT(t)))
}
