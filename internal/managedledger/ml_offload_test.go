package managedledger

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/magnetar-io/magnetar/internal/ledger"
	"github.com/magnetar-io/magnetar/internal/offload"
)

// faultyOffloader fails offloads and deletes on demand.
type faultyOffloader struct {
	offload.Offloader
	mu          sync.Mutex
	failOffload int // fail this many more offloads
	failDelete  bool
}

var errInjected = errors.New("injected store failure")

func (f *faultyOffloader) Offload(ctx context.Context, src offload.Source, ref offload.Ref, extra map[string]string) (offload.Result, error) {
	f.mu.Lock()
	fail := f.failOffload > 0
	if fail {
		f.failOffload--
	}
	f.mu.Unlock()
	if fail {
		return offload.Result{}, errInjected
	}
	return f.Offloader.Offload(ctx, src, ref, extra)
}

func (f *faultyOffloader) Delete(ctx context.Context, ref offload.Ref) error {
	f.mu.Lock()
	fail := f.failDelete
	f.mu.Unlock()
	if fail {
		return errInjected
	}
	return f.Offloader.Delete(ctx, ref)
}

func fileOffloader(t *testing.T, dir string) *faultyOffloader {
	t.Helper()
	c := offload.DefaultConfig()
	c.Driver = offload.DriverFilesystem
	c.FileSystemURI = "file://" + dir
	c.MaxBlockSize, c.ReadBufferSize = 4<<10, 1<<10
	o, err := offload.New(context.Background(), c, offload.Options{Retry: offload.Retry{Attempts: 1}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { o.Close() })
	return &faultyOffloader{Offloader: o}
}

func (e *env) offloadFactory(o offload.Offloader) *Factory {
	e.t.Helper()
	f, err := NewFactory(FactoryOptions{Ledger: e.lc, Store: e.store, Config: e.cfg, Now: e.clock.Now, DisableBackground: true, Offloader: o})
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { _ = f.Close(context.Background()) })
	return f
}

func objects(t *testing.T, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range es {
		out = append(out, e.Name())
	}
	return out
}

// readEverything reads the whole log with a new reader and checks each payload.
func readEverything(t *testing.T, ml *ManagedLedger, want []Position, prefix string) {
	t.Helper()
	c, err := ml.NewNonDurableCursor(Earliest, false)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(context.Background())
	got := readAll(t, c)
	if len(got) != len(want) {
		t.Fatalf("read %d entries, want %d", len(got), len(want))
	}
	for i, e := range got {
		if e.Position != want[i] || !bytes.Equal(e.Data, []byte(fmt.Sprintf("%s-%d", prefix, i))) {
			t.Fatalf("entry %d: %v %q, want %v", i, e.Position, e.Data, want[i])
		}
	}
}

// keep opens a durable cursor at the start, so that retention keeps every ledger.
func keep(t *testing.T, ml *ManagedLedger) {
	t.Helper()
	if _, err := ml.OpenCursor(ctxT(t), "keep", InitialPositionEarliest); err != nil {
		t.Fatal(err)
	}
}

func offloadedLedgers(ml *ManagedLedger) (offloaded, total int) {
	for _, l := range ml.InternalStats().Ledgers {
		total++
		if l.Offloaded {
			offloaded++
		}
	}
	return
}

func TestOffloadDeleteBookieCopiesAndReadBack(t *testing.T) {
	e := newEnv(t)
	e.cfg.MaxEntriesPerLedger = 10
	dir := t.TempDir()
	o := fileOffloader(t, dir)
	f := e.offloadFactory(o)
	ml := open(t, f, "t/ns/persistent/off", func(c *Config) { c.Offload.DeletionLagMillis = 0 })
	keep(t, ml)
	ps := addN(t, ml, 55, "m")
	if st := ml.OffloadStatus(); st.Status != OffloadNotRun {
		t.Fatalf("status before any run: %+v", st)
	}
	first, err := ml.Offload(ctxT(t), ml.LastConfirmedEntry())
	if err != nil {
		t.Fatal(err)
	}
	ids := ml.LedgerIDs()
	if want := (Position{ids[len(ids)-1], 0}); first != want {
		t.Fatalf("first unoffloaded %v, want %v", first, want)
	}
	if n, total := offloadedLedgers(ml); n != 5 || total != 6 {
		t.Fatalf("%d of %d ledgers offloaded, want 5 of 6", n, total)
	}
	if st := ml.OffloadStatus(); st.Status != OffloadSuccess || st.FirstUnoffloaded != first {
		t.Fatalf("status %+v", st)
	}
	if got := len(objects(t, dir)); got != 10 {
		t.Fatalf("%d objects, want a data and an index object for each of 5 ledgers", got)
	}
	if ml.OffloadedSize() == 0 {
		t.Fatal("no offloaded size")
	}
	// The deletion lag of 0 lets maintenance delete the bookie copies.
	f.RunMaintenance(ctxT(t))
	for _, id := range ids[:5] {
		if _, err := e.lc.Open(ctxT(t), id, ledger.OpenOptions{}); !errors.Is(err, ledger.ErrNoSuchLedger) {
			t.Fatalf("bookie copy of ledger %d still there: %v", id, err)
		}
	}
	f.EvictCache()
	f.cache.invalidateLedger(ids[0])
	readEverything(t, ml, ps, "m")

	// A restarted broker reads the offload state from the ledger list.
	crash(f)
	f2 := e.offloadFactory(o)
	ml2 := open(t, f2, "t/ns/persistent/off", nil)
	if n, _ := offloadedLedgers(ml2); n != 5 {
		t.Fatalf("after restart %d ledgers offloaded", n)
	}
	readEverything(t, ml2, ps, "m")

	// Deleting the topic deletes the objects.
	if err := ml2.Delete(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	if left := objects(t, dir); len(left) != 0 {
		t.Fatalf("objects left after topic deletion: %v", left)
	}
}

func TestOffloadFailureKeepsBookieCopy(t *testing.T) {
	e := newEnv(t)
	e.cfg.MaxEntriesPerLedger = 10
	dir := t.TempDir()
	o := fileOffloader(t, dir)
	o.failOffload = offloadAttempts // every try of the first ledger fails
	f := e.offloadFactory(o)
	ml := open(t, f, "t/ns/persistent/fail", func(c *Config) { c.Offload.DeletionLagMillis = 0 })
	keep(t, ml)
	ps := addN(t, ml, 25, "m")
	_, err := ml.Offload(ctxT(t), ml.LastConfirmedEntry())
	if !errors.Is(err, errInjected) {
		t.Fatalf("offload error %v", err)
	}
	st := ml.OffloadStatus()
	if st.Status != OffloadError || st.LastError == "" || st.FirstUnoffloaded != (Position{ml.LedgerIDs()[0], 0}) {
		t.Fatalf("status %+v", st)
	}
	if n, _ := offloadedLedgers(ml); n != 0 {
		t.Fatalf("%d ledgers marked offloaded after a failure", n)
	}
	f.RunMaintenance(ctxT(t)) // no complete offload: nothing may leave the bookies
	for _, id := range ml.LedgerIDs() {
		if _, err := e.lc.Open(ctxT(t), id, ledger.OpenOptions{}); err != nil {
			t.Fatalf("ledger %d: %v", id, err)
		}
	}
	readEverything(t, ml, ps, "m")
	if _, err := ml.Offload(ctxT(t), ml.LastConfirmedEntry()); err != nil {
		t.Fatalf("retry: %v", err)
	}
	if n, _ := offloadedLedgers(ml); n != 2 {
		t.Fatalf("%d ledgers offloaded after the retry", n)
	}
	if got := len(objects(t, dir)); got != 4 {
		t.Fatalf("%d objects: the failed attempts left some", got)
	}
	readEverything(t, ml, ps, "m")
}

func TestTrimDeletesOffloadedObjectsAndRetriesRefusals(t *testing.T) {
	e := newEnv(t)
	e.cfg.MaxEntriesPerLedger = 10
	dir := t.TempDir()
	o := fileOffloader(t, dir)
	f := e.offloadFactory(o)
	ml := open(t, f, "t/ns/persistent/trim", nil)
	c, err := ml.OpenCursor(ctxT(t), "sub", InitialPositionEarliest)
	if err != nil {
		t.Fatal(err)
	}
	ps := addN(t, ml, 35, "m")
	if _, err := ml.Offload(ctxT(t), ml.LastConfirmedEntry()); err != nil {
		t.Fatal(err)
	}
	if got := len(objects(t, dir)); got != 6 {
		t.Fatalf("%d objects", got)
	}
	o.mu.Lock()
	o.failDelete = true
	o.mu.Unlock()
	if err := c.MarkDelete(ps[24]); err != nil { // the first two ledgers are consumed
		t.Fatal(err)
	}
	if err := ml.Retention().Trim(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	pending := f.PendingOffloadDeletes()
	if len(pending) != 2 || pending[0].LastError == "" {
		t.Fatalf("pending deletes %+v", pending)
	}
	if got := len(objects(t, dir)); got != 6 {
		t.Fatalf("refused deletes removed objects: %d left", got)
	}
	o.mu.Lock()
	o.failDelete = false
	o.mu.Unlock()
	f.RunMaintenance(ctxT(t))
	if p := f.PendingOffloadDeletes(); len(p) != 0 {
		t.Fatalf("still pending %+v", p)
	}
	if got := len(objects(t, dir)); got != 2 {
		t.Fatalf("%d objects left, want the third ledger's two", got)
	}
}

func TestOffloadThresholdTriggersOffload(t *testing.T) {
	e := newEnv(t)
	e.cfg.MaxEntriesPerLedger = 10
	o := fileOffloader(t, t.TempDir())
	f := e.offloadFactory(o)
	ml := open(t, f, "t/ns/persistent/auto", nil)
	keep(t, ml)
	addN(t, ml, 45, "m")
	f.RunMaintenance(ctxT(t)) // threshold -1 (default): nothing
	if err := ml.WaitOffload(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	if n, _ := offloadedLedgers(ml); n != 0 {
		t.Fatalf("offloaded %d ledgers without a policy", n)
	}
	cfg := ml.Config()
	cfg.Offload.ThresholdBytes = 0
	if err := ml.SetConfig(cfg); err != nil {
		t.Fatal(err)
	}
	f.RunMaintenance(ctxT(t))
	if err := ml.WaitOffload(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	if n, total := offloadedLedgers(ml); n != total-1 {
		t.Fatalf("threshold 0 offloaded %d of %d ledgers", n, total)
	}

	// By age: ThresholdSeconds offloads ledgers closed before the cutoff.
	ml2 := open(t, f, "t/ns/persistent/age", func(c *Config) { c.Offload.ThresholdSeconds = 3600 })
	keep(t, ml2)
	addN(t, ml2, 25, "m")
	f.RunMaintenance(ctxT(t))
	_ = ml2.WaitOffload(ctxT(t))
	if n, _ := offloadedLedgers(ml2); n != 0 {
		t.Fatalf("young ledgers offloaded: %d", n)
	}
	e.clock.Advance(2 * time.Hour)
	f.RunMaintenance(ctxT(t))
	_ = ml2.WaitOffload(ctxT(t))
	if n, _ := offloadedLedgers(ml2); n != 2 {
		t.Fatalf("old ledgers offloaded: %d", n)
	}
}

func TestOffloadWithoutDriver(t *testing.T) {
	e := newEnv(t)
	f := e.factory()
	ml := open(t, f, "t/ns/persistent/none", nil)
	if _, err := ml.Offload(ctxT(t), ml.LastConfirmedEntry()); !errors.Is(err, ErrOffloadDisabled) {
		t.Fatalf("offload without a driver: %v", err)
	}
}
