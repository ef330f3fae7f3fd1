package broker

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"os"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/magnetar-io/magnetar/internal/config"
	"github.com/magnetar-io/magnetar/internal/ledger"
	"github.com/magnetar-io/magnetar/internal/ledger/memledger"
	"github.com/magnetar-io/magnetar/internal/managedledger"
	"github.com/magnetar-io/magnetar/internal/metadata"
	"github.com/magnetar-io/magnetar/internal/metadata/memstore"
	"github.com/magnetar-io/magnetar/internal/resources"
	"github.com/magnetar-io/magnetar/internal/topics"
)

// testBroker is an in-process broker on 127.0.0.1:0 over real TCP: the Pulsar front end over
// the topic service over the real managed ledger, on the storage newTestStorage chooses (by
// default embedded etcd, a bookie on disk and the replicated ledger client, as standalone
// runs them).
type testBroker struct {
	s     *Server
	url   string
	ln    net.Listener
	reg   *prometheus.Registry
	store metadata.Store
	f     *managedledger.Factory
}

func testLogger(t testing.TB) *slog.Logger {
	if testing.Verbose() {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.DiscardHandler)
}

// startBroker runs a broker on the storage newTestStorage chooses.
func startBroker(t testing.TB, mutate func(*config.BrokerConfig)) *testBroker {
	t.Helper()
	return startBrokerOn(t, true, mutate)
}

// startBrokerOn runs a broker on the storage newTestStorage chooses (realStorage) or, for
// tests of the broker's own logic that run many rounds, on the in-memory metadata store and
// ledger twin under the same managed ledger.
func startBrokerOn(t testing.TB, realStorage bool, mutate func(*config.BrokerConfig)) *testBroker {
	t.Helper()
	logger := testLogger(t)
	var store metadata.Store
	var ledgers ledger.Client
	if realStorage {
		store, ledgers = newTestStorage(t, logger)
	} else {
		store, ledgers = memstore.New(memstore.DefaultOptions()), memledger.New()
	}
	bootstrapNamespaces(t, store)
	f := newTestFactory(t, store, ledgers, logger)
	cfg := testBrokerConfig(mutate)
	reg := prometheus.NewRegistry()
	s := newTestServer(t, cfg, store, f, logger, reg, nil)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = s.Serve(ln) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := closeServer(ctx, s); err != nil {
			t.Errorf("broker close: %v", err)
		}
		if err := f.Close(ctx); err != nil {
			t.Errorf("managed ledger factory close: %v", err)
		}
	})
	return &testBroker{s: s, url: "pulsar://" + ln.Addr().String(), ln: ln, reg: reg, store: store, f: f}
}

// testBrokerConfig is the broker configuration of the tests: loopback, one bookie's
// quorums, the Go client test harness's message size.
func testBrokerConfig(mutate func(*config.BrokerConfig)) config.BrokerConfig {
	cfg := config.DefaultBrokerConfig()
	cfg.BindAddress, cfg.AdvertisedAddress, cfg.ServicePort = "127.0.0.1", "127.0.0.1", 0
	cfg.MaxMessageSize = 1 << 20 // as the Go client's test harness runs Pulsar
	if mutate != nil {
		mutate(&cfg)
	}
	return cfg
}

// newTestFactory opens the managed ledgers of a test broker (one bookie: quorums of 1).
func newTestFactory(t testing.TB, store metadata.Store, ledgers ledger.Client, logger *slog.Logger) *managedledger.Factory {
	t.Helper()
	mlCfg := config.DefaultManagedLedgerConfig()
	mlCfg.EnsembleSize, mlCfg.WriteQuorum, mlCfg.AckQuorum = 1, 1, 1
	f, err := managedledger.NewFactory(managedledger.FactoryOptions{Ledger: ledgers, Store: store, Config: mlCfg, Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// newTestServer builds the topic service and the Pulsar front end over it, as
// brokerd.StartServices does.
func newTestServer(t testing.TB, cfg config.BrokerConfig, store metadata.Store, f *managedledger.Factory, logger *slog.Logger,
	reg prometheus.Registerer, own topics.Ownership) *Server {
	t.Helper()
	svc, err := topics.New(topics.Options{Config: cfg, Store: store, Ledgers: f, Logger: logger, Registerer: reg, Ownership: own})
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(cfg, Deps{Topics: svc, Logger: logger, Registerer: reg})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// closeServer closes the front end, then its topic service.
func closeServer(ctx context.Context, s *Server) error {
	return errors.Join(s.Close(ctx), s.topics.Close(ctx))
}

// bootstrapNamespaces creates what standalone creates on first start (resources.EnsureDefaults),
// since the broker auto-creates topics only in existing namespaces.
func bootstrapNamespaces(t testing.TB, store metadata.Store) {
	t.Helper()
	if err := resources.New(store).EnsureDefaults(context.Background(), "standalone"); err != nil {
		t.Fatal(err)
	}
}
