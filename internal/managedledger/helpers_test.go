package managedledger

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/magnetar-io/magnetar/internal/config"
	"github.com/magnetar-io/magnetar/internal/ledger/memledger"
	"github.com/magnetar-io/magnetar/internal/metadata"
	"github.com/magnetar-io/magnetar/internal/metadata/memstore"
)

// fakeClock is the injected clock for rollover, retention and quota tests.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func newFakeClock() *fakeClock { return &fakeClock{t: time.Unix(1_764_400_000, 0)} }

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// countingStore counts metadata writes per key.
type countingStore struct {
	metadata.Store
	mu   sync.Mutex
	puts map[string]int
}

func (s *countingStore) Put(ctx context.Context, key string, value []byte, expected metadata.Version) (metadata.Version, error) {
	s.mu.Lock()
	s.puts[key]++
	s.mu.Unlock()
	return s.Store.Put(ctx, key, value, expected)
}

func (s *countingStore) count(key string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.puts[key]
}

// env is one "cluster": bookies (memledger) and metadata (memstore) that outlive factories
// (brokers) built on them.
type env struct {
	t     *testing.T
	lc    *memledger.Client
	store *countingStore
	clock *fakeClock
	cfg   config.ManagedLedgerConfig
}

func newEnv(t *testing.T) *env {
	t.Helper()
	cfg := config.DefaultManagedLedgerConfig()
	cfg.EnsembleSize, cfg.WriteQuorum, cfg.AckQuorum = 1, 1, 1
	cfg.MinLedgerRolloverTimeMinutes = 0
	cfg.MarkDeleteRateLimit = 1000
	cfg.CacheSizeMB = 16
	return &env{
		t:     t,
		lc:    memledger.New(),
		store: &countingStore{Store: memstore.New(memstore.DefaultOptions()), puts: map[string]int{}},
		clock: newFakeClock(),
		cfg:   cfg,
	}
}

func (e *env) factory() *Factory {
	e.t.Helper()
	f, err := NewFactory(FactoryOptions{Ledger: e.lc, Store: e.store, Config: e.cfg, Now: e.clock.Now, DisableBackground: true})
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { _ = f.Close(context.Background()) })
	return f
}

// crash drops a factory the way a killed broker would: nothing is flushed or closed.
func crash(f *Factory) {
	f.mu.Lock()
	f.closed = true
	f.mu.Unlock()
	for _, ml := range f.openLedgers() {
		ml.abandon()
	}
}

func ctxT(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func open(t *testing.T, f *Factory, name string, mod func(*Config)) *ManagedLedger {
	t.Helper()
	cfg := f.DefaultConfig()
	if mod != nil {
		mod(&cfg)
	}
	ml, err := f.Open(ctxT(t), name, cfg)
	if err != nil {
		t.Fatalf("open %s: %v", name, err)
	}
	return ml
}

func addN(t *testing.T, ml *ManagedLedger, n int, prefix string) []Position {
	t.Helper()
	ps := make([]Position, 0, n)
	for i := 0; i < n; i++ {
		p, err := ml.Add(ctxT(t), []byte(fmt.Sprintf("%s-%d", prefix, i)))
		if err != nil {
			t.Fatalf("add %d: %v", i, err)
		}
		ps = append(ps, p)
	}
	return ps
}

// readAll drains a cursor without waiting.
func readAll(t *testing.T, c *Cursor) []Entry {
	t.Helper()
	var out []Entry
	for {
		es, err := c.ReadEntries(ctxT(t), 7, 0)
		if errors.Is(err, ErrNoMoreEntries) {
			return out
		}
		if err != nil {
			t.Fatalf("read: %v", err)
		}
		if len(es) == 0 {
			return out
		}
		out = append(out, es...)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func wantPos(t *testing.T, what string, got, want Position) {
	t.Helper()
	if got != want {
		t.Fatalf("%s = %v, want %v", what, got, want)
	}
}

// activeCursor opens a durable cursor at the end of ml and marks it active, as the broker
// does when a consumer attaches, so adds are cached for it.
func activeCursor(t *testing.T, ml *ManagedLedger, name string) *Cursor {
	t.Helper()
	c, err := ml.OpenCursor(ctxT(t), name, InitialPositionLatest)
	must(t, err)
	c.SetActive()
	return c
}
