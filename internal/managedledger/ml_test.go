package managedledger

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/magnetar-io/magnetar/internal/ledger"
	"github.com/magnetar-io/magnetar/internal/ledger/memledger"
	"github.com/magnetar-io/magnetar/internal/metadata"
)

func TestAddsArePipelinedAndCompleteInOrder(t *testing.T) {
	e := newEnv(t)
	e.lc.SetFaults(memledger.Faults{AppendDelay: 50 * time.Microsecond})
	f := e.factory()
	ml := open(t, f, "t/pipeline", func(c *Config) { c.MaxEntriesPerLedger = 97 })
	const n = 1000
	var mu sync.Mutex
	var got []int
	var positions []Position
	var wg sync.WaitGroup
	wg.Add(n)
	for i := 0; i < n; i++ {
		i := i
		must(t, ml.AddEntry([]byte(fmt.Sprint(i)), func(p Position, err error) {
			defer wg.Done()
			if err != nil {
				t.Errorf("add %d: %v", i, err)
				return
			}
			mu.Lock()
			got = append(got, i)
			positions = append(positions, p)
			mu.Unlock()
		}))
	}
	wg.Wait()
	for i := range got {
		if got[i] != i {
			t.Fatalf("callback %d was for add %d", i, got[i])
		}
		if i > 0 && !positions[i-1].Less(positions[i]) {
			t.Fatalf("positions not increasing: %v then %v", positions[i-1], positions[i])
		}
	}
	if ml.NumberOfEntries() != n {
		t.Fatalf("entries = %d", ml.NumberOfEntries())
	}
	if l := len(ml.LedgerIDs()); l < n/97 {
		t.Fatalf("only %d ledgers after %d adds with 97 per ledger", l, n)
	}
	c, err := ml.OpenCursor(ctxT(t), "s", InitialPositionEarliest)
	must(t, err)
	es := readAll(t, c)
	if len(es) != n {
		t.Fatalf("read %d entries", len(es))
	}
	for i, en := range es {
		if string(en.Data) != fmt.Sprint(i) || en.Position != positions[i] {
			t.Fatalf("entry %d = %q at %v, want %d at %v", i, en.Data, en.Position, i, positions[i])
		}
	}
}

func TestRolloverTriggers(t *testing.T) {
	t.Run("entries", func(t *testing.T) {
		e := newEnv(t)
		ml := open(t, e.factory(), "t/r", func(c *Config) { c.MaxEntriesPerLedger = 10 })
		addN(t, ml, 35, "x")
		waitFor(t, "4 ledgers", func() bool { return len(ml.LedgerIDs()) == 4 })
		st := ml.InternalStats()
		for _, l := range st.Ledgers[:3] {
			if l.Entries != 10 {
				t.Fatalf("ledger %d has %d entries, want 10: %+v", l.LedgerID, l.Entries, st.Ledgers)
			}
		}
	})
	t.Run("size", func(t *testing.T) {
		e := newEnv(t)
		ml := open(t, e.factory(), "t/r", func(c *Config) { c.MaxSizePerLedgerBytes = 1000 })
		for i := 0; i < 5; i++ {
			_, err := ml.Add(ctxT(t), make([]byte, 600))
			must(t, err)
			// Each second add crosses 1000 bytes; wait for the rollover it triggers so the
			// layout is deterministic.
			waitFor(t, "rollover settled", func() bool { return !ml.rollingNow() })
		}
		st := ml.InternalStats()
		if len(st.Ledgers) != 3 || st.Ledgers[0].Entries != 2 || st.Ledgers[1].Entries != 2 {
			t.Fatalf("ledgers = %+v, want 2+2+1 entries", st.Ledgers)
		}
	})
	t.Run("max age", func(t *testing.T) {
		e := newEnv(t)
		ml := open(t, e.factory(), "t/r", nil)
		ml.CheckRollover()
		if len(ml.LedgerIDs()) != 1 {
			t.Fatal("rolled over an empty ledger")
		}
		addN(t, ml, 3, "x")
		e.clock.Advance(e.cfg.MaxLedgerRolloverTime() - time.Second)
		ml.CheckRollover()
		if len(ml.LedgerIDs()) != 1 {
			t.Fatal("rolled over before the max rollover time")
		}
		e.clock.Advance(2 * time.Second)
		ml.CheckRollover()
		waitFor(t, "age rollover", func() bool { return len(ml.LedgerIDs()) == 2 })
	})
	t.Run("min age holds size and count", func(t *testing.T) {
		e := newEnv(t)
		e.cfg.MinLedgerRolloverTimeMinutes = 10
		ml := open(t, e.factory(), "t/r", func(c *Config) { c.MaxEntriesPerLedger = 2 })
		addN(t, ml, 5, "x")
		if len(ml.LedgerIDs()) != 1 {
			t.Fatal("rolled over by count before the min rollover time")
		}
		e.clock.Advance(11 * time.Minute)
		addN(t, ml, 1, "y")
		waitFor(t, "count rollover after min time", func() bool { return len(ml.LedgerIDs()) == 2 })
	})
	t.Run("write failure", func(t *testing.T) {
		e := newEnv(t)
		ml := open(t, e.factory(), "t/r", nil)
		addN(t, ml, 3, "a")
		first := ml.LedgerIDs()[0]
		var once sync.Once
		e.lc.SetFaults(memledger.Faults{AppendError: func(lid, eid int64) error {
			var err error
			if lid == first && eid == 3 {
				once.Do(func() { err = errors.New("bookie went away") })
			}
			return err
		}})
		ps := addN(t, ml, 5, "b") // every add still succeeds, on a new ledger
		if ps[0].LedgerID == first {
			t.Fatalf("add after the failure went to the failed ledger: %v", ps[0])
		}
		c, err := ml.OpenCursor(ctxT(t), "s", InitialPositionEarliest)
		must(t, err)
		var data []string
		for _, en := range readAll(t, c) {
			data = append(data, string(en.Data))
		}
		if got := strings.Join(data, ","); got != "a-0,a-1,a-2,b-0,b-1,b-2,b-3,b-4" {
			t.Fatalf("log = %s", got)
		}
	})
}

func (ml *ManagedLedger) rollingNow() bool {
	ml.mu.Lock()
	defer ml.mu.Unlock()
	return ml.add.rolling
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

func TestCreateFailureFailsPendingAndRecovers(t *testing.T) {
	e := newEnv(t)
	ml := open(t, e.factory(), "t/c", func(c *Config) { c.MaxEntriesPerLedger = 2 })
	addN(t, ml, 2, "a")
	waitFor(t, "rollover", func() bool { return len(ml.LedgerIDs()) == 2 })
	cur := ml.LedgerIDs()[1]
	fail := true
	var mu sync.Mutex
	e.lc.SetFaults(memledger.Faults{
		CreateError: func() error {
			mu.Lock()
			defer mu.Unlock()
			if fail {
				return errors.New("no bookies")
			}
			return nil
		},
		AppendError: func(lid, _ int64) error {
			if lid == cur {
				return errors.New("write failed")
			}
			return nil
		},
	})
	_, err := ml.Add(ctxT(t), []byte("x"))
	if !errors.Is(err, ErrLedgerUnavailable) {
		t.Fatalf("add with no bookies: %v, want ErrLedgerUnavailable", err)
	}
	mu.Lock()
	fail = false
	mu.Unlock()
	p, err := ml.Add(ctxT(t), []byte("y"))
	must(t, err)
	if p.LedgerID == cur {
		t.Fatalf("add went to the failed ledger")
	}
	if st := ml.InternalStats(); st.LastLedgerCreationFailureTimestamp == "" {
		t.Fatal("creation failure not in stats")
	}
}

func TestFencingOfPreviousOwner(t *testing.T) {
	e := newEnv(t)
	f1 := e.factory()
	ml1 := open(t, f1, "t/f", nil)
	addN(t, ml1, 5, "old")

	f2 := e.factory() // a second broker takes the topic over
	ml2 := open(t, f2, "t/f", nil)

	_, err := ml1.Add(ctxT(t), []byte("late"))
	if !errors.Is(err, ErrFenced) || !errors.Is(err, ledger.ErrFenced) {
		t.Fatalf("old owner's add = %v, want ErrFenced wrapping ledger.ErrFenced", err)
	}
	if err := ml1.AddEntry([]byte("later"), func(Position, error) {}); !errors.Is(err, ErrFenced) {
		t.Fatalf("old owner's next add = %v, want ErrFenced", err)
	}
	addN(t, ml2, 2, "new")
	c, err := ml2.OpenCursor(ctxT(t), "s", InitialPositionEarliest)
	must(t, err)
	var data []string
	for _, en := range readAll(t, c) {
		data = append(data, string(en.Data))
	}
	if got := strings.Join(data, ","); got != "old-0,old-1,old-2,old-3,old-4,new-0,new-1" {
		t.Fatalf("log after takeover = %s", got)
	}
	if st := ml1.InternalStats(); st.State != "Fenced" {
		t.Fatalf("old owner state %q", st.State)
	}
}

func TestTerminate(t *testing.T) {
	e := newEnv(t)
	f := e.factory()
	ml := open(t, f, "t/term", nil)
	ps := addN(t, ml, 3, "x")
	c, err := ml.OpenCursor(ctxT(t), "s", InitialPositionEarliest)
	must(t, err)
	done := make(chan error, 1)
	go func() {
		_, err := c.ReadEntriesOrWait(ctxT(t), 10, 0)
		if err == nil {
			_, err = c.ReadEntriesOrWait(ctxT(t), 10, 0)
		}
		done <- err
	}()
	last, err := ml.Terminate(ctxT(t))
	must(t, err)
	wantPos(t, "terminated at", last, ps[2])
	if _, err := ml.Add(ctxT(t), []byte("y")); !errors.Is(err, ErrTerminated) {
		t.Fatalf("add after terminate: %v", err)
	}
	if err := <-done; !errors.Is(err, ErrNoMoreEntries) {
		t.Fatalf("waiting read at the end = %v, want ErrNoMoreEntries", err)
	}
	must(t, ml.Close(ctxT(t)))
	ml2 := open(t, e.factory(), "t/term", nil)
	if !ml2.IsTerminated() {
		t.Fatal("termination not persisted")
	}
	if _, err := ml2.Add(ctxT(t), []byte("z")); !errors.Is(err, ErrTerminated) {
		t.Fatalf("add after reopen: %v", err)
	}
}

func TestWaitingReadWakesOnAdd(t *testing.T) {
	e := newEnv(t)
	ml := open(t, e.factory(), "t/w", nil)
	c, err := ml.OpenCursor(ctxT(t), "s", InitialPositionLatest)
	must(t, err)
	got := make(chan []Entry, 1)
	c.AsyncReadEntriesOrWait(10, 0, func(es []Entry, err error) {
		if err != nil {
			t.Error(err)
		}
		got <- es
	})
	waitFor(t, "read parked", func() bool { return ml.InternalStats().WaitingCursorsCount == 1 })
	p, err := ml.Add(ctxT(t), []byte("hello"))
	must(t, err)
	es := <-got
	if len(es) != 1 || es[0].Position != p || string(es[0].Data) != "hello" {
		t.Fatalf("woken read = %+v", es)
	}
	// A canceled read never calls back.
	cancel := c.AsyncReadEntriesOrWait(10, 0, func([]Entry, error) { t.Error("canceled read called back") })
	waitFor(t, "read parked", func() bool { return ml.InternalStats().WaitingCursorsCount == 1 })
	if !cancel() {
		t.Fatal("cancel of a waiting read reported false")
	}
	waitFor(t, "read gone", func() bool { return ml.InternalStats().WaitingCursorsCount == 0 })
}

func TestInternalStatsShape(t *testing.T) {
	e := newEnv(t)
	ml := open(t, e.factory(), "t/stats", func(c *Config) { c.MaxEntriesPerLedger = 4 })
	ps := addN(t, ml, 10, "x")
	c, err := ml.OpenCursor(ctxT(t), "sub", InitialPositionEarliest)
	must(t, err)
	must(t, c.Delete(ps[2], ps[3], ps[6]))
	st := ml.InternalStats()
	b, err := json.Marshal(st)
	must(t, err)
	for _, k := range []string{`"entriesAddedCounter":10`, `"numberOfEntries":10`, `"totalSize":`, `"currentLedgerEntries":`,
		`"ledgers":[{"ledgerId":`, `"markDeletePosition":`, `"readPosition":`, `"individuallyDeletedMessages":`, `"messagesConsumedCounter":3`} {
		if !strings.Contains(string(b), k) {
			t.Errorf("internal stats JSON lacks %s: %s", k, b)
		}
	}
	want := fmt.Sprintf("[(%d:1..%d:3],(%d:1..%d:2]]", ps[2].LedgerID, ps[2].LedgerID, ps[6].LedgerID, ps[6].LedgerID)
	if got := st.Cursors["sub"].IndividuallyDeletedMessages; got != want {
		t.Fatalf("individuallyDeletedMessages = %s, want %s", got, want)
	}
	if c.Backlog() != 7 {
		t.Fatalf("backlog = %d, want 7", c.Backlog())
	}
}

func TestCloseCompletesAddsAcrossRollover(t *testing.T) {
	e := newEnv(t)
	e.lc.SetFaults(memledger.Faults{AppendDelay: 100 * time.Microsecond})
	f := e.factory()
	ml := open(t, f, "t/close", func(c *Config) { c.MaxEntriesPerLedger = 7 })
	const n = 60
	var wg sync.WaitGroup
	var failed sync.Map
	wg.Add(n)
	for i := 0; i < n; i++ {
		i := i
		must(t, ml.AddEntry([]byte(fmt.Sprint(i)), func(_ Position, err error) {
			if err != nil {
				failed.Store(i, err)
			}
			wg.Done()
		}))
	}
	must(t, ml.Close(ctxT(t)))
	wg.Wait()
	failed.Range(func(k, v any) bool { t.Errorf("add %v failed: %v", k, v); return true })
	ml2 := open(t, e.factory(), "t/close", nil)
	if ml2.NumberOfEntries() != n {
		t.Fatalf("entries after reopen %d", ml2.NumberOfEntries())
	}
}

// TestCloseTimeoutWithAddsInFlight: Close gives up waiting (its context ends) while adds are
// still in flight; their late completions must be dropped, not crash the broker.
func TestCloseTimeoutWithAddsInFlight(t *testing.T) {
	e := newEnv(t)
	e.lc.SetFaults(memledger.Faults{AppendDelay: 5 * time.Millisecond})
	f := e.factory()
	ml := open(t, f, "t/slow", nil)
	var wg sync.WaitGroup
	var failed, ok atomic.Int32
	for i := 0; i < 20; i++ {
		wg.Add(1)
		must(t, ml.AddEntry([]byte("x"), func(_ Position, err error) {
			if err != nil {
				failed.Add(1)
			} else {
				ok.Add(1)
			}
			wg.Done()
		}))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 12*time.Millisecond)
	defer cancel()
	if err := ml.Close(ctx); err == nil {
		t.Log("close finished before its deadline; nothing in flight to test")
	}
	wg.Wait()
	if failed.Load()+ok.Load() != 20 {
		t.Fatalf("callbacks: %d ok, %d failed", ok.Load(), failed.Load())
	}
	time.Sleep(150 * time.Millisecond) // let the writer deliver its late results
}

// TestLostCASWithAddsInFlight: a trim loses its CAS (a newer owner rewrote the list) while
// adds are in flight on the still-healthy ledger: the adds fail as fenced and their late
// successes are dropped.
func TestLostCASWithAddsInFlight(t *testing.T) {
	e := newEnv(t)
	e.lc.SetFaults(memledger.Faults{AppendDelay: 2 * time.Millisecond})
	ml := open(t, e.factory(), "t/cas", func(c *Config) { c.MaxEntriesPerLedger = 2 })
	addN(t, ml, 4, "x")
	waitFor(t, "rollovers", func() bool { return len(ml.LedgerIDs()) == 3 && !ml.rollingNow() })
	// Someone else rewrites the ledger list.
	kv, err := e.store.Get(ctxT(t), ml.key)
	must(t, err)
	_, err = e.store.Put(ctxT(t), ml.key, kv.Value, kv.Version)
	must(t, err)
	var wg sync.WaitGroup
	var fenced atomic.Int32
	for i := 0; i < 10; i++ {
		wg.Add(1)
		must(t, ml.AddEntry([]byte("y"), func(_ Position, err error) {
			if errors.Is(err, ErrFenced) {
				fenced.Add(1)
			}
			wg.Done()
		}))
	}
	if err := ml.Retention().Trim(ctxT(t)); !errors.Is(err, metadata.ErrBadVersion) {
		t.Fatalf("trim = %v, want a lost CAS", err)
	}
	wg.Wait()
	if fenced.Load() == 0 {
		t.Log("every add completed before the trim; nothing in flight to test")
	}
	time.Sleep(50 * time.Millisecond)
}

// TestReopenAfterFencing: once an instance is fenced, Open on the same factory returns a
// fresh one that recovers from the newer owner's state, not the fenced instance.
func TestReopenAfterFencing(t *testing.T) {
	e := newEnv(t)
	f1 := e.factory()
	ml1 := open(t, f1, "t/reopen", nil)
	addN(t, ml1, 2, "a")
	ml2 := open(t, e.factory(), "t/reopen", nil)
	addN(t, ml2, 3, "b")
	if _, err := ml1.Add(ctxT(t), []byte("late")); !errors.Is(err, ErrFenced) {
		t.Fatalf("fenced add: %v", err)
	}
	ml1b := open(t, f1, "t/reopen", nil)
	if ml1b == ml1 {
		t.Fatal("Open returned the fenced instance")
	}
	if ml1b.NumberOfEntries() != 5 {
		t.Fatalf("reopened with %d entries, want 5", ml1b.NumberOfEntries())
	}
}
