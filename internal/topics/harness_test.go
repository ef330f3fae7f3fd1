package topics

import (
	"context"
	"log/slog"
	"os"
	"testing"
	"time"

	"github.com/magnetar-io/magnetar/internal/config"
	"github.com/magnetar-io/magnetar/internal/ledger"
	"github.com/magnetar-io/magnetar/internal/ledger/memledger"
	"github.com/magnetar-io/magnetar/internal/managedledger"
	"github.com/magnetar-io/magnetar/internal/metadata"
	"github.com/magnetar-io/magnetar/internal/metadata/memstore"
	"github.com/magnetar-io/magnetar/internal/resources"
)

// The topic service's own tests run it without any wire protocol, on the in-memory metadata
// store and ledger twin under the real managed ledger; the Pulsar front end's tests
// (internal/broker) run it end to end with the official client over real storage.

const waitFor = 30 * time.Second

func testLogger(t testing.TB) *slog.Logger {
	if testing.Verbose() {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.DiscardHandler)
}

// memBackend is a metadata store and ledgers that outlive the services started on them
// (a restart keeps what was stored).
type memBackend struct {
	store   metadata.Store
	ledgers ledger.Client
}

func newMemBackend(t testing.TB) *memBackend {
	t.Helper()
	store := memstore.New(memstore.DefaultOptions())
	if err := resources.New(store).EnsureDefaults(context.Background(), "standalone"); err != nil {
		t.Fatal(err)
	}
	return &memBackend{store: store, ledgers: memledger.New()}
}

// testService is a running topic service with its managed-ledger factory.
type testService struct {
	*Service
	f *managedledger.Factory
}

// start runs a topic service on the backend; stop (or the test's end) closes it.
func (b *memBackend) start(t testing.TB, mutate func(*config.BrokerConfig)) *testService {
	t.Helper()
	logger := testLogger(t)
	mlCfg := config.DefaultManagedLedgerConfig()
	mlCfg.EnsembleSize, mlCfg.WriteQuorum, mlCfg.AckQuorum = 1, 1, 1
	f, err := managedledger.NewFactory(managedledger.FactoryOptions{Ledger: b.ledgers, Store: b.store, Config: mlCfg, Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	cfg := config.DefaultBrokerConfig()
	if mutate != nil {
		mutate(&cfg)
	}
	svc, err := New(Options{Config: cfg, Store: b.store, Ledgers: f, Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	ts := &testService{Service: svc, f: f}
	t.Cleanup(ts.stop)
	return ts
}

func (ts *testService) stop() {
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	_ = ts.Close(ctx)
	_ = ts.f.Close(ctx)
}

func ctxT(t testing.TB) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	t.Cleanup(cancel)
	return ctx
}

func mustName(t testing.TB, s string) Name {
	t.Helper()
	n, err := ParseName(s)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// waitUntil polls cond until it holds (bounded by waitFor).
func waitUntil(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(waitFor)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
