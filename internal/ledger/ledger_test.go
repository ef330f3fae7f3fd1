package ledger

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/magnetar-io/magnetar/internal/bookieproto"
	"github.com/magnetar-io/magnetar/internal/config"
	"github.com/magnetar-io/magnetar/internal/metadata"
)

var testPassword = []byte("secret")

func testConfig() config.LedgerClientConfig {
	cfg := config.DefaultLedgerClientConfig()
	cfg.AddEntryTimeout = 2 * time.Second
	cfg.ReadEntryTimeout = 2 * time.Second
	cfg.SpeculativeReadTimeout = 20 * time.Millisecond
	cfg.LACLongPollTimeout = 200 * time.Millisecond
	cfg.LostBookieRecoveryDelay = 100 * time.Millisecond
	cfg.AuditorPeriodicCheckInterval = 50 * time.Millisecond
	cfg.AuditorSessionTimeout = time.Second
	return cfg
}

func testLogger(t testing.TB) *slog.Logger {
	if os.Getenv("LEDGER_TEST_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.DiscardHandler)
}

func newTestClient(t testing.TB, store metadata.Store, bk bookieproto.Client, mut ...func(*config.LedgerClientConfig)) *client {
	t.Helper()
	cfg := testConfig()
	for _, f := range mut {
		f(&cfg)
	}
	c, err := newClient(context.Background(), ClientOptions{Config: cfg, Store: store, Bookies: bk, Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func testCtx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func entryData(i int64) []byte { return []byte(fmt.Sprintf("entry-%05d", i)) }

// ackLog records append results from callbacks.
type ackLog struct {
	mu    sync.Mutex
	acked []int64
	errs  []error
	wg    sync.WaitGroup
}

func (a *ackLog) append(w Writer, data []byte) {
	a.wg.Add(1)
	w.AppendAsync(data, func(id int64, err error) {
		a.mu.Lock()
		if err != nil {
			a.errs = append(a.errs, err)
		} else {
			a.acked = append(a.acked, id)
		}
		a.mu.Unlock()
		a.wg.Done()
	})
}

func (a *ackLog) wait(t testing.TB) {
	t.Helper()
	ch := make(chan struct{})
	go func() { a.wg.Wait(); close(ch) }()
	select {
	case <-ch:
	case <-time.After(30 * time.Second):
		a.mu.Lock()
		acked, failed := len(a.acked), len(a.errs)
		a.mu.Unlock()
		// A hang is rare and timing-bound (a seed alone does not replay it): keep every
		// goroutine's stack so the writer's state can be read from the failure.
		buf := make([]byte, 1<<20)
		buf = buf[:runtime.Stack(buf, true)]
		t.Fatalf("appends did not finish: %d acknowledged, %d failed, the rest pending\n%s", acked, failed, buf)
	}
}

// testCluster is a set of registered bookies the scenario tests run on: the in-process
// fake (fault injection) or real bookie servers over TCP.
type testCluster interface {
	metaStore() metadata.Store
	newBookieClient() bookieproto.Client
	kill(addr string)
	hasEntry(addr string, ledgerID, entryID int64) bool
}

func mustMeta(t testing.TB, store metadata.Store, id int64) *ledgerMetadata {
	t.Helper()
	m, _, err := readMetadata(context.Background(), store, id)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// checkReadsBack opens the ledger and checks entries 0..last hold entryData.
func checkReadsBack(t testing.TB, c Client, id, last int64) {
	t.Helper()
	r, err := c.Open(testCtx(t), id, OpenOptions{Password: testPassword})
	if err != nil {
		t.Fatal(err)
	}
	if !r.IsClosed() || r.LastAddConfirmed() != last {
		t.Fatalf("ledger %d: closed %v last %d, want closed at %d", id, r.IsClosed(), r.LastAddConfirmed(), last)
	}
	if last < 0 {
		return
	}
	ents, err := r.Read(testCtx(t), 0, last)
	if err != nil {
		t.Fatal(err)
	}
	for i, e := range ents {
		if e.EntryID != int64(i) || !bytes.Equal(e.Data, entryData(int64(i))) {
			t.Fatalf("entry %d: got id %d data %q", i, e.EntryID, e.Data)
		}
	}
}

func TestAppendCloseRead(t *testing.T) {
	fc := newFakeCluster(t)
	fc.addBookies(3)
	c := newTestClient(t, fc.store, fc.client())
	ctx := testCtx(t)
	w, err := c.Create(ctx, CreateOptions{EnsembleSize: 3, WriteQuorum: 3, AckQuorum: 2, Password: testPassword, CustomMetadata: map[string]string{"topic": "t"}})
	if err != nil {
		t.Fatal(err)
	}
	for i := range int64(100) {
		id, err := w.Append(ctx, entryData(i))
		if err != nil || id != i {
			t.Fatalf("append %d: id %d err %v", i, id, err)
		}
	}
	if w.LastAddConfirmed() != 99 {
		t.Fatalf("lac %d", w.LastAddConfirmed())
	}
	if err := w.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Append(ctx, []byte("late")); !errors.Is(err, ErrClosed) {
		t.Fatalf("append after close: %v", err)
	}
	checkReadsBack(t, c, w.ID(), 99)
	m := mustMeta(t, fc.store, w.ID())
	var want int64
	for i := range int64(100) {
		want += int64(len(entryData(i)))
	}
	if m.Length != want || m.CustomMetadata["topic"] != "t" {
		t.Fatalf("length %d want %d, custom %v", m.Length, want, m.CustomMetadata)
	}
	if _, err := c.Open(ctx, w.ID(), OpenOptions{Password: []byte("wrong")}); !errors.Is(err, ErrUnauthorized) {
		t.Fatalf("wrong password: %v", err)
	}
	if _, err := c.Open(ctx, 12345, OpenOptions{}); !errors.Is(err, ErrNoSuchLedger) {
		t.Fatalf("missing ledger: %v", err)
	}
}

func TestCreateArguments(t *testing.T) {
	fc := newFakeCluster(t)
	fc.addBookies(2)
	c := newTestClient(t, fc.store, fc.client(), func(cfg *config.LedgerClientConfig) { cfg.AddEntryTimeout = 50 * time.Millisecond })
	ctx := testCtx(t)
	for _, o := range []CreateOptions{{EnsembleSize: 2, WriteQuorum: 3, AckQuorum: 2}, {EnsembleSize: 2, WriteQuorum: 2, AckQuorum: 0}, {EnsembleSize: 2, WriteQuorum: 2, AckQuorum: 2, Digest: 9}} {
		if _, err := c.Create(ctx, o); !errors.Is(err, ErrBadArgument) {
			t.Fatalf("%+v: %v", o, err)
		}
	}
	if _, err := c.Create(ctx, CreateOptions{EnsembleSize: 3, WriteQuorum: 2, AckQuorum: 2}); !errors.Is(err, ErrNotEnoughBookies) {
		t.Fatalf("3 of 2 bookies: %v", err)
	}
}

// (a) E=3 Qw=3 Qa=2: a bookie dies mid-stream; no acknowledged entry is lost, writes go on
// without an error and the ledger has two fragments.
func TestKillBookieMidStream(t *testing.T) {
	fc := newFakeCluster(t)
	fc.addBookies(4)
	testKillBookieMidStream(t, fc)
}

// testKillBookieMidStream needs four bookies.
func testKillBookieMidStream(t *testing.T, fc testCluster) {
	c := newTestClient(t, fc.metaStore(), fc.newBookieClient())
	ctx := testCtx(t)
	w, err := c.Create(ctx, CreateOptions{EnsembleSize: 3, WriteQuorum: 3, AckQuorum: 2, Password: testPassword})
	if err != nil {
		t.Fatal(err)
	}
	victim := mustMeta(t, fc.metaStore(), w.ID()).Fragments[0].Ensemble[1]
	var log ackLog
	for i := range int64(400) {
		if i == 200 {
			// Some entries must be confirmed first, or the change rewrites fragment 0 in place.
			waitFor(t, func() bool { return w.LastAddConfirmed() >= 100 })
			fc.kill(victim)
		}
		log.append(w, entryData(i))
	}
	log.wait(t)
	if len(log.errs) > 0 {
		t.Fatalf("appends failed: %v", log.errs[0])
	}
	if !slices.IsSorted(log.acked) || len(log.acked) != 400 {
		t.Fatalf("acks out of order or missing: %d", len(log.acked))
	}
	// The failed add may be reported after the other replicas acknowledged everything; the
	// ensemble change still happens while the ledger is open.
	waitFor(t, func() bool { return len(mustMeta(t, fc.metaStore(), w.ID()).Fragments) == 2 })
	if err := w.Close(ctx); err != nil {
		t.Fatal(err)
	}
	m := mustMeta(t, fc.metaStore(), w.ID())
	if len(m.Fragments) != 2 {
		t.Fatalf("fragments %+v, want 2", m.Fragments)
	}
	if slices.Contains(m.Fragments[1].Ensemble, victim) {
		t.Fatalf("second fragment %+v still holds %s", m.Fragments[1], victim)
	}
	checkReadsBack(t, c, w.ID(), 399)
}

// (b) E=5 Qw=3 Qa=2: striping puts each entry on exactly its three write-set bookies and
// uses all five.
func TestStriping(t *testing.T) {
	fc := newFakeCluster(t)
	testStriping(t, fc, fc.addBookies(5))
}

func testStriping(t *testing.T, fc testCluster, addrs []string) {
	c := newTestClient(t, fc.metaStore(), fc.newBookieClient())
	ctx := testCtx(t)
	w, err := c.Create(ctx, CreateOptions{EnsembleSize: 5, WriteQuorum: 3, AckQuorum: 2, Password: testPassword})
	if err != nil {
		t.Fatal(err)
	}
	for i := range int64(50) {
		if _, err := w.Append(ctx, entryData(i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(ctx); err != nil {
		t.Fatal(err)
	}
	ens := mustMeta(t, fc.metaStore(), w.ID()).Fragments[0].Ensemble
	// Append waits for Qa only; give the third copy of the last entries time to land.
	waitFor(t, func() bool {
		for e := range int64(50) {
			for _, pos := range writeSet(e, 5, 3) {
				if !fc.hasEntry(ens[pos], w.ID(), e) {
					return false
				}
			}
		}
		return true
	})
	perBookie := map[string]int{}
	for e := range int64(50) {
		n := 0
		for _, a := range addrs {
			if fc.hasEntry(a, w.ID(), e) {
				n++
				perBookie[a]++
			}
		}
		if n != 3 {
			t.Fatalf("entry %d on %d bookies", e, n)
		}
	}
	for _, a := range addrs {
		if perBookie[a] != 30 {
			t.Fatalf("bookie %s stored %d entries, want 30", a, perBookie[a])
		}
	}
	checkReadsBack(t, c, w.ID(), 49)
}

func waitFor(t testing.TB, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not reached")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// (c) Two writers: the second opens with recovery while the first still appends. The first
// gets ErrFenced; every entry it had acknowledged is in the closed ledger and nothing it
// acknowledged lies after the recovered last entry.
func TestSecondWriterRecoversAndFencesFirst(t *testing.T) {
	fc := newFakeCluster(t)
	fc.addBookies(3)
	testSecondWriterRecoversAndFencesFirst(t, fc)
}

func testSecondWriterRecoversAndFencesFirst(t *testing.T, fc testCluster) {
	c1 := newTestClient(t, fc.metaStore(), fc.newBookieClient())
	c2 := newTestClient(t, fc.metaStore(), fc.newBookieClient())
	ctx := testCtx(t)
	w, err := c1.Create(ctx, CreateOptions{EnsembleSize: 3, WriteQuorum: 3, AckQuorum: 2, Password: testPassword})
	if err != nil {
		t.Fatal(err)
	}
	var log ackLog
	stop := make(chan struct{})
	var feeder sync.WaitGroup
	feeder.Add(1)
	go func() {
		defer feeder.Done()
		for i := int64(0); ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			log.append(w, entryData(i))
			if i%50 == 0 {
				time.Sleep(time.Millisecond)
			}
		}
	}()
	waitFor(t, func() bool { return w.LastAddConfirmed() >= 100 })
	r, err := c2.Open(ctx, w.ID(), OpenOptions{Recovery: true, Password: testPassword})
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool { log.mu.Lock(); defer log.mu.Unlock(); return len(log.errs) > 0 })
	close(stop)
	feeder.Wait()
	log.wait(t)
	last := r.LastAddConfirmed()
	if !r.IsClosed() {
		t.Fatal("recovered ledger not closed")
	}
	for _, err := range log.errs {
		if !errors.Is(err, ErrFenced) {
			t.Fatalf("first writer error %v, want ErrFenced", err)
		}
	}
	maxAcked := slices.Max(log.acked)
	if maxAcked > last {
		t.Fatalf("entry %d acknowledged after recovery closed the ledger at %d", maxAcked, last)
	}
	if err := w.Close(ctx); !errors.Is(err, ErrFenced) {
		t.Fatalf("close of fenced writer: %v", err)
	}
	if _, err := w.Append(ctx, []byte("x")); !errors.Is(err, ErrFenced) {
		t.Fatalf("append after fence: %v", err)
	}
	checkReadsBack(t, c2, w.ID(), last)
	// The metadata must still say CLOSED at last: the fenced writer's Close changed nothing.
	if m := mustMeta(t, fc.metaStore(), w.ID()); m.State != stateClosed || m.LastEntryID != last {
		t.Fatalf("metadata %s last %d", m.State, m.LastEntryID)
	}
}

// (e) A bookie that returns a corrupt copy makes recovery stop, not truncate.
func TestRecoveryCorruptEntryDoesNotTruncate(t *testing.T) {
	fc := newFakeCluster(t)
	fc.addBookies(3)
	c1 := newTestClient(t, fc.store, fc.client())
	c2 := newTestClient(t, fc.store, fc.client())
	ctx := testCtx(t)
	w, err := c1.Create(ctx, CreateOptions{EnsembleSize: 3, WriteQuorum: 3, AckQuorum: 2, Password: testPassword})
	if err != nil {
		t.Fatal(err)
	}
	ens := mustMeta(t, fc.store, w.ID()).Fragments[0].Ensemble
	a, b, cc := fc.bookie(ens[0]), fc.bookie(ens[1]), fc.bookie(ens[2])
	cc.holdAdds() // the third copy never lands: every entry lives on a and b only
	for i := range int64(10) {
		if _, err := w.Append(ctx, entryData(i)); err != nil {
			t.Fatal(err)
		}
	}
	// Entry 9 is acknowledged, but the bookies' LAC is 8: recovery must read 9.
	a.set(func(b *fakeBookie) { b.corrupt[9] = true })
	b.set(func(b *fakeBookie) { b.corrupt[9] = true })
	_, err = c2.Open(ctx, w.ID(), OpenOptions{Recovery: true, Password: testPassword})
	if !errors.Is(err, ErrRecoveryIncomplete) {
		t.Fatalf("recovery with two corrupt copies: %v, want ErrRecoveryIncomplete", err)
	}
	if m := mustMeta(t, fc.store, w.ID()); m.State != stateInRecovery {
		t.Fatalf("state %s after failed recovery", m.State)
	}
	// One good copy is enough to recover the entry.
	b.set(func(b *fakeBookie) { b.corrupt[9] = false })
	cc.releaseAdds() // (fenced now: the writer's queued adds are refused)
	r, err := c2.Open(ctx, w.ID(), OpenOptions{Recovery: true, Password: testPassword})
	if err != nil {
		t.Fatal(err)
	}
	if r.LastAddConfirmed() != 9 {
		t.Fatalf("recovered to %d, want 9", r.LastAddConfirmed())
	}
	// A normal read of entry 9 skips the corrupt replica.
	ents, err := r.Read(ctx, 9, 9)
	if err != nil || !bytes.Equal(ents[0].Data, entryData(9)) {
		t.Fatalf("read 9: %v %v", err, ents)
	}
	// With every replica corrupt a read is ErrCorrupt, never "no such entry".
	b.set(func(b *fakeBookie) { b.corrupt[9] = true })
	cc.set(func(b *fakeBookie) { b.corrupt[9] = true })
	if _, err := r.Read(ctx, 9, 9); !errors.Is(err, ErrCorrupt) || errors.Is(err, ErrNoSuchEntry) {
		t.Fatalf("read of corrupt entry: %v", err)
	}
}

// BookKeeper #2614: a fence request is lost and the entry sits on one bookie whose answer
// is slow. Two NoSuchEntry answers let recovery close the ledger before the entry; the
// recovery reads carried the fence flag, so the old writer's delayed add to the bookie that
// missed the fence is rejected and the entry is never acknowledged.
func TestRecoveryWithDroppedFence(t *testing.T) {
	fc := newFakeCluster(t)
	fc.addBookies(3)
	long := func(cfg *config.LedgerClientConfig) { cfg.AddEntryTimeout = 20 * time.Second }
	c1 := newTestClient(t, fc.store, fc.client(), long)
	c2 := newTestClient(t, fc.store, fc.client(), long)
	ctx := testCtx(t)
	w, err := c1.Create(ctx, CreateOptions{EnsembleSize: 3, WriteQuorum: 3, AckQuorum: 2, Password: testPassword})
	if err != nil {
		t.Fatal(err)
	}
	for i := range int64(5) {
		if _, err := w.Append(ctx, entryData(i)); err != nil {
			t.Fatal(err)
		}
	}
	ens := mustMeta(t, fc.store, w.ID()).Fragments[0].Ensemble
	x, y, z := fc.bookie(ens[0]), fc.bookie(ens[1]), fc.bookie(ens[2])
	waitFor(t, func() bool { return z.has(w.ID(), 4) && y.has(w.ID(), 4) })
	y.holdAdds()
	z.holdAdds()
	var log ackLog
	log.append(w, entryData(5)) // reaches x only
	waitFor(t, func() bool { return x.has(w.ID(), 5) })
	y.set(func(b *fakeBookie) { b.dropFence = true })
	x.set(func(b *fakeBookie) { b.readDelay = time.Second })

	r, err := c2.Open(ctx, w.ID(), OpenOptions{Recovery: true, Password: testPassword})
	if err != nil {
		t.Fatal(err)
	}
	if r.LastAddConfirmed() != 4 {
		t.Fatalf("recovered to %d, want 4 (entry 5 was never acknowledged)", r.LastAddConfirmed())
	}
	y.releaseAdds() // the old writer's add of entry 5 now reaches the bookie that missed the fence
	z.releaseAdds()
	log.wait(t)
	if len(log.acked) != 0 || !errors.Is(log.errs[0], ErrFenced) {
		t.Fatalf("entry 5 after recovery: acked %v errs %v", log.acked, log.errs)
	}
}

// Recovery of a ledger whose writer changed ensembles: entries of both fragments survive.
func TestRecoveryAcrossEnsembleChange(t *testing.T) {
	fc := newFakeCluster(t)
	fc.addBookies(5)
	testRecoveryAcrossEnsembleChange(t, fc)
}

// testRecoveryAcrossEnsembleChange needs five bookies.
func testRecoveryAcrossEnsembleChange(t *testing.T, fc testCluster) {
	c1 := newTestClient(t, fc.metaStore(), fc.newBookieClient())
	c2 := newTestClient(t, fc.metaStore(), fc.newBookieClient())
	ctx := testCtx(t)
	w, err := c1.Create(ctx, CreateOptions{EnsembleSize: 3, WriteQuorum: 3, AckQuorum: 2, Password: testPassword})
	if err != nil {
		t.Fatal(err)
	}
	for i := range int64(20) {
		if _, err := w.Append(ctx, entryData(i)); err != nil {
			t.Fatal(err)
		}
	}
	first := mustMeta(t, fc.metaStore(), w.ID()).Fragments[0].Ensemble
	fc.kill(first[0])
	for i := int64(20); i < 40; i++ {
		if _, err := w.Append(ctx, entryData(i)); err != nil {
			t.Fatal(err)
		}
	}
	m := mustMeta(t, fc.metaStore(), w.ID())
	if len(m.Fragments) != 2 {
		t.Fatalf("fragments %+v", m.Fragments)
	}
	// The replacement bookie dies too, before recovery (the two others still hold every
	// entry): recovery fences those two ((E-Qa)+1 = 2) and writes recovered entries back
	// around the dead one.
	fc.kill(m.Fragments[1].Ensemble[0])
	r, err := c2.Open(ctx, w.ID(), OpenOptions{Recovery: true, Password: testPassword})
	if err != nil {
		t.Fatal(err)
	}
	if r.LastAddConfirmed() < 39 {
		t.Fatalf("recovered to %d, lost acknowledged entries", r.LastAddConfirmed())
	}
	checkReadsBack(t, c2, w.ID(), r.LastAddConfirmed())
}

func TestTailingReaderLongPoll(t *testing.T) {
	fc := newFakeCluster(t)
	fc.addBookies(3)
	c := newTestClient(t, fc.store, fc.client())
	ctx := testCtx(t)
	w, err := c.Create(ctx, CreateOptions{EnsembleSize: 3, WriteQuorum: 2, AckQuorum: 2, Password: testPassword})
	if err != nil {
		t.Fatal(err)
	}
	r, err := c.Open(ctx, w.ID(), OpenOptions{Password: testPassword})
	if err != nil {
		t.Fatal(err)
	}
	if r.IsClosed() || r.LastAddConfirmed() != -1 {
		t.Fatal("fresh ledger should be open and empty")
	}
	go func() {
		for i := range int64(20) {
			if _, err := w.Append(ctx, entryData(i)); err != nil {
				return
			}
		}
		_ = w.Close(ctx)
	}()
	next := int64(0)
	for {
		lac, err := r.WaitLastAddConfirmed(ctx, next-1)
		if errors.Is(err, ErrClosed) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		ents, err := r.Read(ctx, next, lac)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range ents {
			if e.EntryID != next || !bytes.Equal(e.Data, entryData(next)) {
				t.Fatalf("entry %d: %q", e.EntryID, e.Data)
			}
			next++
		}
	}
	// The LAC travels on the next add, so the last entry is learned from the close.
	if next != 20 || r.LastAddConfirmed() != 19 {
		t.Fatalf("tailed %d entries, lac %d", next, r.LastAddConfirmed())
	}
	if lac, err := r.ReadLastAddConfirmed(ctx); err != nil || lac != 19 {
		t.Fatalf("ReadLastAddConfirmed %d %v", lac, err)
	}
}

func TestSpeculativeReadPastSlowBookie(t *testing.T) {
	fc := newFakeCluster(t)
	fc.addBookies(3)
	c := newTestClient(t, fc.store, fc.client())
	ctx := testCtx(t)
	w, err := c.Create(ctx, CreateOptions{EnsembleSize: 3, WriteQuorum: 3, AckQuorum: 3, Password: testPassword})
	if err != nil {
		t.Fatal(err)
	}
	for i := range int64(6) {
		if _, err := w.Append(ctx, entryData(i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(ctx); err != nil {
		t.Fatal(err)
	}
	for _, a := range mustMeta(t, fc.store, w.ID()).Fragments[0].Ensemble[:2] {
		fc.bookie(a).set(func(b *fakeBookie) { b.readDelay = 10 * time.Second })
	}
	r, err := c.Open(ctx, w.ID(), OpenOptions{Password: testPassword})
	if err != nil {
		t.Fatal(err)
	}
	// Entry 0's first two replicas hang; the speculative read reaches the third in time
	// (the read timeout would otherwise make this take 2 s per replica).
	ents, err := r.Read(ctx, 0, 0)
	if err != nil || !bytes.Equal(ents[0].Data, entryData(0)) {
		t.Fatalf("read: %v", err)
	}
}

func TestDeleteLedger(t *testing.T) {
	fc := newFakeCluster(t)
	addrs := fc.addBookies(3)
	c := newTestClient(t, fc.store, fc.client())
	ctx := testCtx(t)
	w, err := c.Create(ctx, CreateOptions{EnsembleSize: 3, WriteQuorum: 3, AckQuorum: 3, Password: testPassword})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Append(ctx, entryData(0)); err != nil {
		t.Fatal(err)
	}
	if err := c.Delete(ctx, w.ID()); err != nil {
		t.Fatal(err)
	}
	for _, a := range addrs {
		if fc.bookie(a).has(w.ID(), 0) {
			t.Fatalf("bookie %s still has the entry", a)
		}
	}
	if _, err := c.Open(ctx, w.ID(), OpenOptions{Password: testPassword}); !errors.Is(err, ErrNoSuchLedger) {
		t.Fatalf("open deleted: %v", err)
	}
	if err := c.Delete(ctx, w.ID()); !errors.Is(err, ErrNoSuchLedger) {
		t.Fatalf("delete twice: %v", err)
	}
}

func TestLedgerIDsUniqueAcrossClients(t *testing.T) {
	fc := newFakeCluster(t)
	fc.addBookies(2)
	ctx := testCtx(t)
	var mu sync.Mutex
	seen := map[int64]bool{}
	var wg sync.WaitGroup
	for range 4 {
		c := newTestClient(t, fc.store, fc.client())
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 10 {
				w, err := c.Create(ctx, CreateOptions{EnsembleSize: 2, WriteQuorum: 2, AckQuorum: 1})
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				if seen[w.ID()] {
					t.Errorf("ledger id %d handed out twice", w.ID())
				}
				seen[w.ID()] = true
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
}

// TestSilentReplicaDoesNotStallReads: one bookie of the ensemble stops answering reads
// (a SIGSTOPped process: connection open, no answers). Catch-up reads, batched (Qw == E)
// and single-entry (Qw < E), must go to the other replicas after the speculative timeout
// instead of waiting out the read timeout each time the silent bookie's turn comes, and the
// silent bookie must be taken out of the read order: it gets a handful of reads (the one
// that found it silent and the probes), not its share. Once it answers again it is back.
func TestSilentReplicaDoesNotStallReads(t *testing.T) {
	for _, shape := range [][3]int{{3, 3, 2}, {3, 2, 2}} {
		t.Run(fmt.Sprintf("E%dQw%dQa%d", shape[0], shape[1], shape[2]), func(t *testing.T) {
			fc := newFakeCluster(t)
			fc.addBookies(3)
			c := newTestClient(t, fc.store, fc.client(), func(cfg *config.LedgerClientConfig) {
				// Long enough that waiting on the silent bookie even a few times would run
				// into the test's deadline.
				cfg.ReadEntryTimeout = 20 * time.Second
				cfg.ReadBatchMaxBytes = 1024
			})
			ctx := testCtx(t)
			w, err := c.Create(ctx, CreateOptions{EnsembleSize: shape[0], WriteQuorum: shape[1], AckQuorum: shape[2], Password: testPassword})
			if err != nil {
				t.Fatal(err)
			}
			const n = 600
			for i := range int64(n) {
				w.AppendAsync(entryData(i), func(int64, error) {})
			}
			if err := w.Close(ctx); err != nil {
				t.Fatal(err)
			}
			silent := fc.bookie(mustMeta(t, fc.store, w.ID()).Fragments[0].Ensemble[1])
			silent.set(func(b *fakeBookie) { b.readDelay = time.Hour; b.reads = 0 })
			r, err := c.Open(ctx, w.ID(), OpenOptions{Password: testPassword})
			if err != nil {
				t.Fatal(err)
			}
			readAll := func() {
				t.Helper()
				for first := int64(0); first < n; first += 50 {
					ents, err := r.Read(ctx, first, first+49)
					if err != nil {
						t.Fatalf("read %d..: %v", first, err)
					}
					for _, e := range ents {
						if !bytes.Equal(e.Data, entryData(e.EntryID)) {
							t.Fatalf("entry %d: %q", e.EntryID, e.Data)
						}
					}
				}
			}
			readAll()
			var asked int
			silent.set(func(b *fakeBookie) { asked = b.reads })
			// Single-entry reads start a whole Read call's entries at once (50 here, under
			// maxReadsInProgressLimit), so those that begin at the silent bookie before it
			// is found out count too; staying in the order would be ~n/3 (200).
			if asked > 50+3 {
				t.Fatalf("the silent bookie was asked %d reads: it stayed in the read order", asked)
			}
			if out := c.reads.outList(); !slices.Equal(out, []string{silent.addr}) {
				t.Fatalf("out of the read order: %v, want [%s]", out, silent.addr)
			}
			// It answers again: a probe brings it back and it serves its share.
			silent.set(func(b *fakeBookie) { b.readDelay = 0 })
			waitFor(t, func() bool { readAll(); return len(c.reads.outList()) == 0 })
			silent.set(func(b *fakeBookie) { b.reads = 0 })
			readAll()
			silent.set(func(b *fakeBookie) { asked = b.reads })
			if asked == 0 {
				t.Fatal("the resumed bookie gets no reads")
			}
		})
	}
}
