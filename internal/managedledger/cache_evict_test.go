package managedledger

import (
	"bytes"
	"fmt"
	"testing"
	"time"
)

func TestEntryCacheEvictBefore(t *testing.T) {
	clk := newFakeClock()
	c := newEntryCache(1<<20, 0.9, time.Hour, clk.Now)
	for l := int64(1); l <= 2; l++ {
		for e := int64(0); e < 5; e++ {
			c.insert(Position{l, e}, []byte{byte(l), byte(e)}, EntryMeta{})
		}
	}
	c.evictBefore(1, 3)
	for e := int64(0); e < 5; e++ {
		if _, ok := c.get(Position{1, e}); ok != (e >= 3) {
			t.Fatalf("entry 1:%d cached=%v after evictBefore(1,3)", e, ok)
		}
	}
	c.evictBefore(1, maxEntryID)
	if c.hasLedger(1) || !c.hasLedger(2) {
		t.Fatalf("ledger 1 cached=%v, ledger 2 cached=%v", c.hasLedger(1), c.hasLedger(2))
	}
	st := c.stats()
	if st.Entries != 5 || st.SizeBytes != 10 || st.ConsumedEvictions != 5 || st.Evictions != 5 {
		t.Fatalf("stats %+v", st)
	}
	// The global FIFO and the per-ledger lists stay consistent under mixed removals.
	c.invalidateLedger(2)
	if st := c.stats(); st.Entries != 0 || st.SizeBytes != 0 || c.head != nil || c.tail != nil || len(c.perLedger) != 0 {
		t.Fatalf("after invalidate: %+v head=%v perLedger=%d", st, c.head, len(c.perLedger))
	}
	c.insert(Position{3, 0}, []byte("x"), EntryMeta{})
	c.evictBefore(3, 0) // nothing below entry 0
	if _, ok := c.get(Position{3, 0}); !ok {
		t.Fatal("evictBefore(3,0) dropped entry 3:0")
	}
}

// TestEntryCacheEvictBeforeOutOfOrderInserts: the add path caches the newest entries of a
// ledger, then a catch-up read inserts older ones behind them; eviction by position still
// finds the older ones (it stopped at the first new entry and left them to the size bound).
func TestEntryCacheEvictBeforeOutOfOrderInserts(t *testing.T) {
	clk := newFakeClock()
	c := newEntryCache(1<<20, 0.9, time.Hour, clk.Now)
	for e := int64(1000); e < 1010; e++ { // adds
		c.insert(Position{1, e}, []byte("new"), EntryMeta{})
	}
	for e := int64(0); e < 10; e++ { // a catch-up read
		c.insert(Position{1, e}, []byte("old"), EntryMeta{})
	}
	cached := func() (n int) {
		for _, e := range []int64{0, 4, 5, 9, 1000, 1009} {
			if _, ok := c.get(Position{1, e}); ok {
				n++
			}
		}
		return n
	}
	c.evictBefore(1, 5) // looks up ids 0..4
	if _, ok := c.get(Position{1, 4}); ok || cached() != 4 {
		t.Fatalf("after evictBefore(1,5): entry 4 still cached or %d of 0,4,5,9,1000,1009 cached, want 5,9,1000,1009", cached())
	}
	c.evictBefore(1, 600) // far past the 15 cached entries: walks them
	if _, ok := c.get(Position{1, 9}); ok || cached() != 2 {
		t.Fatalf("after evictBefore(1,600): %d cached, want 1000 and 1009", cached())
	}
	c.insert(Position{1, 7}, []byte("re-read"), EntryMeta{}) // below the last bound: a rewind's read
	c.evictBefore(1, 8)
	if _, ok := c.get(Position{1, 7}); ok {
		t.Fatal("entry 7, inserted after the bound passed it, survived evictBefore(1,8)")
	}
	if st := c.stats(); st.Entries != 10 || st.ConsumedEvictions != 11 {
		t.Fatalf("stats %+v, want 10 entries and 11 consumed evictions", st)
	}
}

func TestCacheEvictsWhatEveryCursorRead(t *testing.T) {
	e := newEnv(t)
	f := e.factory()
	ml := open(t, f, "t/evict", nil)
	fast, err := ml.OpenCursor(ctxT(t), "fast", InitialPositionLatest)
	must(t, err)
	slow, err := ml.OpenCursor(ctxT(t), "slow", InitialPositionLatest)
	must(t, err)
	fast.SetActive()
	slow.SetActive()
	ps := addN(t, ml, 20, "m")
	if n := len(readAll(t, fast)); n != 20 {
		t.Fatalf("fast read %d", n)
	}
	// The slow cursor has read nothing: everything stays.
	if st := f.CacheStats(); st.Entries != 20 || st.ConsumedEvictions != 0 {
		t.Fatalf("after fast read: %+v", st)
	}
	es, err := slow.ReadEntries(ctxT(t), 8, 0)
	must(t, err)
	if len(es) != 8 {
		t.Fatalf("slow read %d", len(es))
	}
	st := f.CacheStats()
	if st.Entries != 12 || st.ConsumedEvictions != 8 || st.Misses != 0 {
		t.Fatalf("after slow read of 8: %+v", st)
	}
	for i, p := range ps {
		if _, ok := f.cache.get(p); ok != (i >= 8) {
			t.Fatalf("entry %d (%v) cached=%v", i, p, ok)
		}
	}
	// A rewind reads the evicted entries back from the ledger, intact.
	slow.Rewind()
	got := readAll(t, slow)
	if len(got) != 20 {
		t.Fatalf("after rewind read %d", len(got))
	}
	for i, en := range got {
		if want := []byte(fmt.Sprintf("m-%d", i)); en.Position != ps[i] || !bytes.Equal(en.Data, want) {
			t.Fatalf("entry %d: %v %q, want %v %q", i, en.Position, en.Data, ps[i], want)
		}
	}
	if f.CacheStats().Misses == 0 {
		t.Fatal("rewind was served from the cache after eviction")
	}
	// Both cursors are at the end: the cache holds nothing of this log.
	if st := f.CacheStats(); st.Entries != 0 {
		t.Fatalf("both cursors at the end, cache %+v", st)
	}
}

func TestCacheEvictionWaitsForReaders(t *testing.T) {
	e := newEnv(t)
	f := e.factory()
	ml := open(t, f, "t/reader", nil)
	sub := activeCursor(t, ml, "s")
	reader, err := ml.NewNonDurableCursor(ml.LastConfirmedEntry(), false)
	must(t, err)
	addN(t, ml, 10, "r")
	readAll(t, sub)
	if st := f.CacheStats(); st.Entries != 10 {
		t.Fatalf("reader has read nothing, cache %+v", st)
	}
	readAll(t, reader)
	if st := f.CacheStats(); st.Entries != 0 {
		t.Fatalf("both at the end, cache %+v", st)
	}
	// Other logs' entries are untouched by this log's eviction.
	other := open(t, f, "t/other", nil)
	activeCursor(t, other, "s")
	addN(t, other, 3, "o")
	addN(t, ml, 2, "r")
	readAll(t, sub)
	readAll(t, reader)
	if st := f.CacheStats(); st.Entries != 3 {
		t.Fatalf("other log's entries evicted: %+v", st)
	}
}

func TestCacheEvictsOlderLedgers(t *testing.T) {
	e := newEnv(t)
	f := e.factory()
	ml := open(t, f, "t/roll", func(c *Config) { c.MaxEntriesPerLedger = 4 })
	c := activeCursor(t, ml, "s")
	ps := addN(t, ml, 10, "x")
	if ps[0].LedgerID == ps[9].LedgerID {
		t.Fatalf("no rollover: %v .. %v", ps[0], ps[9])
	}
	if n := len(readAll(t, c)); n != 10 {
		t.Fatalf("read %d", n)
	}
	if st := f.CacheStats(); st.Entries != 0 {
		t.Fatalf("entries of rolled ledgers left after every cursor read them: %+v", st)
	}
}

// Cursors and a reader tailing concurrently with adds (and evicting each other's cache
// entries) all read every entry, in order, intact.
func TestCacheEvictionConcurrentTailing(t *testing.T) {
	e := newEnv(t)
	f := e.factory()
	ml := open(t, f, "t/conc", func(c *Config) { c.MaxEntriesPerLedger = 50 })
	const n = 300
	var cs []*Cursor
	for _, name := range []string{"a", "b", "c"} {
		c, err := ml.OpenCursor(ctxT(t), name, InitialPositionLatest)
		must(t, err)
		c.SetActive()
		cs = append(cs, c)
	}
	r, err := ml.NewNonDurableCursor(ml.LastConfirmedEntry(), false)
	must(t, err)
	cs = append(cs, r)
	errs := make(chan error, len(cs))
	for i, c := range cs {
		go func(i int, c *Cursor) {
			got := 0
			for got < n {
				es, err := c.ReadEntriesOrWait(ctxT(t), 1+i*3, 0)
				if err != nil {
					errs <- err
					return
				}
				for _, en := range es {
					if want := fmt.Sprintf("c-%d", got); string(en.Data) != want {
						errs <- fmt.Errorf("cursor %s entry %d: %q, want %q", c.Name(), got, en.Data, want)
						return
					}
					got++
				}
			}
			errs <- nil
		}(i, c)
	}
	addN(t, ml, n, "c")
	for range cs {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	if st := f.CacheStats(); st.Entries != 0 || st.ConsumedEvictions == 0 {
		t.Fatalf("every cursor at the end, cache %+v", st)
	}
}
