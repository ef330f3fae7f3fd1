package managedledger

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/magnetar-io/magnetar/internal/ledger/memledger"
)

// TestTrimNeverRemovesNeededEntries moves several cursors at random, trims, and checks that
// every entry after the slowest mark-delete position is still readable, and that every
// ledger entirely before it is gone from the list and from the bookies.
func TestTrimNeverRemovesNeededEntries(t *testing.T) {
	e := newEnv(t)
	ml := open(t, e.factory(), "t/trim", func(c *Config) { c.MaxEntriesPerLedger = 4 })
	var cursors []*Cursor
	for i := 0; i < 3; i++ {
		c, err := ml.OpenCursor(ctxT(t), fmt.Sprint("c", i), InitialPositionEarliest)
		must(t, err)
		cursors = append(cursors, c)
	}
	rng := rand.New(rand.NewPCG(3, 4))
	var ps []Position
	for round := 0; round < 30; round++ {
		ps = append(ps, addN(t, ml, 1+rng.IntN(6), "x")...)
		c := cursors[rng.IntN(len(cursors))]
		if rng.IntN(3) == 0 {
			must(t, c.Delete(ps[rng.IntN(len(ps))]))
		} else {
			md := c.MarkDeletePosition()
			var later []Position
			for _, p := range ps {
				if md.Less(p) {
					later = append(later, p)
				}
			}
			if len(later) > 0 {
				must(t, c.MarkDelete(later[rng.IntN(len(later))]))
			}
		}
		must(t, ml.Retention().Trim(ctxT(t)))

		slowest := Latest
		for _, c := range cursors {
			slowest = minPos(slowest, c.MarkDeletePosition())
		}
		ids := ml.LedgerIDs()
		for _, p := range ps {
			if slowest.Less(p) {
				if !e.lc.Exists(p.LedgerID) {
					t.Fatalf("round %d: ledger %d of needed entry %v deleted (slowest %v)", round, p.LedgerID, p, slowest)
				}
			}
		}
		// All needed entries readable through a fresh reader from the slowest position.
		r, err := ml.NewNonDurableCursor(slowest, false)
		must(t, err)
		n := 0
		for _, p := range ps {
			if slowest.Less(p) {
				n++
			}
		}
		if got := len(readAll(t, r)); got != n {
			t.Fatalf("round %d: %d entries readable after %v, want %d", round, got, slowest, n)
		}
		must(t, r.Close(ctxT(t)))
		// Ledgers wholly consumed (and not current) are gone.
		for _, id := range ids[:len(ids)-1] {
			if id < slowest.LedgerID {
				t.Fatalf("round %d: ledger %d before slowest %v still listed", round, id, slowest)
			}
		}
	}
	if len(e.lc.Deleted()) == 0 {
		t.Fatal("nothing was ever trimmed")
	}
}

func TestRetentionKeepsConsumedLedgers(t *testing.T) {
	setup := func(t *testing.T, mod func(*Config)) (*env, *ManagedLedger) {
		e := newEnv(t)
		ml := open(t, e.factory(), "t/ret", func(c *Config) { c.MaxEntriesPerLedger = 2; mod(c) })
		c, err := ml.OpenCursor(ctxT(t), "s", InitialPositionEarliest)
		must(t, err)
		for i := 0; i < 4; i++ {
			_, err := ml.Add(ctxT(t), make([]byte, 100))
			must(t, err)
			e.clock.Advance(time.Minute)
		}
		waitFor(t, "rollover", func() bool { return len(ml.LedgerIDs()) == 3 })
		must(t, c.SkipToEnd())
		return e, ml
	}
	t.Run("time", func(t *testing.T) {
		e, ml := setup(t, func(c *Config) { c.RetentionTime = 10 * time.Minute })
		must(t, ml.Retention().Trim(ctxT(t)))
		if len(ml.LedgerIDs()) != 3 {
			t.Fatal("trimmed within retention time")
		}
		e.clock.Advance(9 * time.Minute)
		must(t, ml.Retention().Trim(ctxT(t)))
		if len(ml.LedgerIDs()) != 2 {
			t.Fatalf("after the first ledger aged out: %v", ml.LedgerIDs())
		}
		e.clock.Advance(10 * time.Minute)
		must(t, ml.Retention().Trim(ctxT(t)))
		if len(ml.LedgerIDs()) != 1 {
			t.Fatalf("after all aged out: %v", ml.LedgerIDs())
		}
	})
	t.Run("size", func(t *testing.T) {
		_, ml := setup(t, func(c *Config) { c.RetentionSizeBytes = 250 })
		must(t, ml.Retention().Trim(ctxT(t)))
		// 400 bytes stored: removing the first 200-byte ledger leaves 200 <= 250.
		if len(ml.LedgerIDs()) != 2 || ml.TotalSize() != 200 {
			t.Fatalf("ledgers %v size %d", ml.LedgerIDs(), ml.TotalSize())
		}
	})
	t.Run("infinite", func(t *testing.T) {
		e, ml := setup(t, func(c *Config) { c.RetentionTime, c.RetentionSizeBytes = -1, -1 })
		e.clock.Advance(1000 * time.Hour)
		must(t, ml.Retention().Trim(ctxT(t)))
		if len(ml.LedgerIDs()) != 3 {
			t.Fatal("infinite retention trimmed")
		}
	})
}

func TestCacheEvictionUnderSmallBudget(t *testing.T) {
	e := newEnv(t)
	e.cfg.CacheSizeMB = 1
	f := e.factory()
	ml := open(t, f, "t/cache", func(c *Config) { c.ReadAheadEntries = 0 })
	ml2 := open(t, f, "t/cache2", nil)
	for _, l := range []*ManagedLedger{ml, ml2} { // connected consumers: adds are cached
		c, err := l.OpenCursor(ctxT(t), "tail", InitialPositionLatest)
		must(t, err)
		c.SetActive()
	}
	entry := make([]byte, 100<<10)
	var ps []Position
	for i := 0; i < 30; i++ {
		p, err := ml.Add(ctxT(t), entry)
		must(t, err)
		ps = append(ps, p)
		_, err = ml2.Add(ctxT(t), entry)
		must(t, err)
		if st := f.CacheStats(); st.SizeBytes > st.MaxBytes {
			t.Fatalf("cache %d bytes over its budget %d", st.SizeBytes, st.MaxBytes)
		}
	}
	st := f.CacheStats()
	if st.Evictions == 0 || st.Entries > 10 {
		t.Fatalf("cache stats %+v", st)
	}
	// Evicted entries are read back from the ledgers.
	c, err := ml.OpenCursor(ctxT(t), "s", InitialPositionEarliest)
	must(t, err)
	if n := len(readAll(t, c)); n != 30 {
		t.Fatalf("read %d entries", n)
	}
	if f.CacheStats().Misses == 0 {
		t.Fatal("catch-up read never missed the cache")
	}
	// Age eviction empties the cache once entries are older than the threshold.
	e.clock.Advance(2 * time.Second)
	f.EvictCache()
	if st := f.CacheStats(); st.Entries != 0 || st.SizeBytes != 0 {
		t.Fatalf("after age eviction %+v", st)
	}
	_ = ps
}

func TestCatchUpReadAhead(t *testing.T) {
	e := newEnv(t)
	e.cfg.CacheSizeMB = 1
	f := e.factory()
	ml := open(t, f, "t/ra", func(c *Config) { c.ReadAheadEntries = 20 })
	addN(t, ml, 50, "x")
	e.clock.Advance(time.Hour)
	f.EvictCache() // everything must now come from the ledger
	c, err := ml.OpenCursor(ctxT(t), "s", InitialPositionEarliest)
	must(t, err)
	c.SetActive()
	es, err := c.ReadEntries(ctxT(t), 5, 0)
	must(t, err)
	if len(es) != 5 {
		t.Fatalf("read %d", len(es))
	}
	before := f.CacheStats()
	es, err = c.ReadEntries(ctxT(t), 10, 0)
	must(t, err)
	after := f.CacheStats()
	if len(es) != 10 || after.Misses != before.Misses || after.Hits-before.Hits != 10 {
		t.Fatalf("read-ahead did not serve the next batch from the cache: before %+v after %+v", before, after)
	}
}

func TestBacklogQuota(t *testing.T) {
	setup := func(t *testing.T) (*env, *ManagedLedger, *Cursor) {
		e := newEnv(t)
		ml := open(t, e.factory(), "t/quota", func(c *Config) { c.MaxEntriesPerLedger = 5 })
		c, err := ml.OpenCursor(ctxT(t), "slow", InitialPositionEarliest)
		must(t, err)
		for i := 0; i < 20; i++ {
			_, err := ml.Add(ctxT(t), make([]byte, 100))
			must(t, err)
		}
		waitFor(t, "rollovers", func() bool { return len(ml.LedgerIDs()) == 5 && !ml.rollingNow() })
		return e, ml, c
	}
	for _, pol := range []BacklogQuotaPolicy{ProducerRequestHold, ProducerException} {
		t.Run(string(pol), func(t *testing.T) {
			_, ml, c := setup(t)
			q := BacklogQuota{LimitBytes: 1000, Policy: pol}
			res, err := ml.Retention().CheckBacklogQuota(ctxT(t), q)
			must(t, err)
			if !res.SizeExceeded || res.Err() == nil || res.BacklogBytes != 2000 {
				t.Fatalf("result %+v", res)
			}
			if c.Backlog() != 20 {
				t.Fatal("producer policy moved the cursor")
			}
			must(t, c.Skip(12))
			res, err = ml.Retention().CheckBacklogQuota(ctxT(t), q)
			must(t, err)
			if res.Exceeded() {
				t.Fatalf("still exceeded after consuming: %+v", res)
			}
		})
	}
	t.Run("consumer_backlog_eviction size", func(t *testing.T) {
		_, ml, c := setup(t)
		res, err := ml.Retention().CheckBacklogQuota(ctxT(t), BacklogQuota{LimitBytes: 1000, Policy: ConsumerBacklogEviction})
		must(t, err)
		if res.Exceeded() || res.Evicted != 10 || c.Backlog() != 10 {
			t.Fatalf("result %+v backlog %d", res, c.Backlog())
		}
	})
	t.Run("time", func(t *testing.T) {
		e, ml, c := setup(t)
		e.clock.Advance(2 * time.Hour)
		q := BacklogQuota{LimitTime: time.Hour, Policy: ProducerException}
		res, err := ml.Retention().CheckBacklogQuota(ctxT(t), q)
		must(t, err)
		if !res.TimeExceeded {
			t.Fatalf("time quota not exceeded: %+v", res)
		}
		q.Policy = ConsumerBacklogEviction
		res, err = ml.Retention().CheckBacklogQuota(ctxT(t), q)
		must(t, err)
		if res.Exceeded() || c.Backlog() != 0 {
			// Every closed ledger is older than the limit; the current one holds none.
			t.Fatalf("after time eviction %+v backlog %d", res, c.Backlog())
		}
	})
}

// TestNewestEntriesReadableWithoutCache: with the cache off, the newest entry of the current
// ledger is not yet readable from the bookies (its LAC travels with the next add); it must
// come from the managed ledger's tail instead of failing or hanging.
func TestNewestEntriesReadableWithoutCache(t *testing.T) {
	e := newEnv(t)
	e.cfg.CacheSizeMB = 0
	ml := open(t, e.factory(), "t/tail", func(c *Config) { c.MaxEntriesPerLedger = 5 })
	c, err := ml.OpenCursor(ctxT(t), "s", InitialPositionEarliest)
	must(t, err)
	for round := 0; round < 3; round++ {
		ps := addN(t, ml, 3, fmt.Sprint("r", round))
		es := readAll(t, c)
		if len(es) != 3 || es[2].Position != ps[2] || string(es[2].Data) != fmt.Sprintf("r%d-2", round) {
			t.Fatalf("round %d: read %v", round, es)
		}
	}
	if l := len(ml.add.tail); l > 2 {
		t.Fatalf("tail holds %d entries with one add in flight at a time", l)
	}
	// Once rolled over, the old ledger is closed and everything reads from the ledgers.
	r, err := ml.NewNonDurableCursor(Earliest, false)
	must(t, err)
	if n := len(readAll(t, r)); n != 9 {
		t.Fatalf("read %d of 9", n)
	}
}

func TestFailedLedgerDeletionIsRetried(t *testing.T) {
	e := newEnv(t)
	ml := open(t, e.factory(), "t/delretry", func(c *Config) { c.MaxEntriesPerLedger = 2 })
	addN(t, ml, 4, "x")
	waitFor(t, "rollovers", func() bool { return len(ml.LedgerIDs()) == 3 && !ml.rollingNow() })
	first := ml.LedgerIDs()[0]
	e.lc.SetFaults(memledger.Faults{DeleteError: func(int64) error { return errors.New("bookies unreachable") }})
	must(t, ml.Retention().Trim(ctxT(t)))
	if len(ml.LedgerIDs()) != 1 || !e.lc.Exists(first) {
		t.Fatalf("list %v; ledger %d exists %v", ml.LedgerIDs(), first, e.lc.Exists(first))
	}
	e.lc.SetFaults(memledger.Faults{})
	must(t, ml.Retention().Trim(ctxT(t)))
	if e.lc.Exists(first) {
		t.Fatal("failed deletion was not retried")
	}
}

func TestReaderSurvivesTrimDuringRead(t *testing.T) {
	e := newEnv(t)
	e.cfg.CacheSizeMB = 0
	ml := open(t, e.factory(), "t/trimrace", func(c *Config) { c.MaxEntriesPerLedger = 3 })
	ps := addN(t, ml, 9, "x")
	waitFor(t, "rollovers", func() bool { return len(ml.LedgerIDs()) == 4 && !ml.rollingNow() })
	sub, err := ml.OpenCursor(ctxT(t), "s", InitialPositionEarliest)
	must(t, err)
	must(t, sub.MarkDelete(ps[2])) // only the first ledger is consumed
	r, err := ml.NewNonDurableCursor(Earliest, false)
	must(t, err)
	// The first ledger is trimmed just as the reader reads it.
	var once sync.Once
	e.lc.SetFaults(memledger.Faults{ReadError: func(lid, _, _ int64) error {
		if lid == ps[0].LedgerID {
			once.Do(func() { must(t, ml.Retention().Trim(context.Background())) })
			return errors.New("ledger deleted")
		}
		return nil
	}})
	es, err := r.ReadEntries(ctxT(t), 10, 0)
	must(t, err)
	if len(es) != 6 || es[0].Position != ps[3] {
		t.Fatalf("after trim the reader read %v", es)
	}
}
