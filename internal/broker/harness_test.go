package broker

import (
	"context"
	"log/slog"
	"net"
	"os"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/magnetar-io/magnetar/internal/config"
	"github.com/magnetar-io/magnetar/internal/managedledger"
	"github.com/magnetar-io/magnetar/internal/metadata"
	"github.com/magnetar-io/magnetar/internal/resources"
)

// testBroker is an in-process broker on 127.0.0.1:0 over real TCP, backed by the real
// managed ledger over the storage newTestStorage chooses: by default embedded etcd, a
// bookie on disk and the replicated ledger client, as standalone runs them.
type testBroker struct {
	s   *Server
	url string
	ln  net.Listener
	reg *prometheus.Registry
	mem *memStorage // the storage twin, when the broker runs on it
}

func testLogger(t testing.TB) *slog.Logger {
	if testing.Verbose() {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.DiscardHandler)
}

// startBroker runs a broker on the real managed ledger.
func startBroker(t testing.TB, mutate func(*config.BrokerConfig)) *testBroker {
	t.Helper()
	return startBrokerOn(t, true, mutate)
}

// startBrokerOn runs a broker on the managed ledger (useManagedLedger) or on the broker's
// own in-memory storage twin (memlog_test.go).
func startBrokerOn(t testing.TB, useManagedLedger bool, mutate func(*config.BrokerConfig)) *testBroker {
	t.Helper()
	logger := testLogger(t)
	store, ledgers := newTestStorage(t, logger)
	bootstrapNamespaces(t, store)
	mlCfg := config.DefaultManagedLedgerConfig()
	mlCfg.EnsembleSize, mlCfg.WriteQuorum, mlCfg.AckQuorum = 1, 1, 1 // one bookie
	f, err := managedledger.NewFactory(managedledger.FactoryOptions{
		Ledger: ledgers, Store: store, Config: mlCfg, Logger: logger,
	})
	if err != nil {
		t.Fatal(err)
	}
	cfg := config.DefaultBrokerConfig()
	cfg.BindAddress, cfg.AdvertisedAddress, cfg.ServicePort = "127.0.0.1", "127.0.0.1", 0
	cfg.MaxMessageSize = 1 << 20 // as the Go client's test harness runs Pulsar
	if mutate != nil {
		mutate(&cfg)
	}
	reg := prometheus.NewRegistry()
	var s *Server
	var mem *memStorage
	if useManagedLedger {
		s, err = New(cfg, Deps{Store: store, Ledgers: f, Logger: logger, Registerer: reg})
	} else {
		mem = newMemStorage()
		s, err = newServer(cfg, store, mem, logger, reg)
	}
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = s.Serve(ln) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := s.Close(ctx); err != nil {
			t.Errorf("broker close: %v", err)
		}
		if err := f.Close(ctx); err != nil {
			t.Errorf("managed ledger factory close: %v", err)
		}
	})
	return &testBroker{s: s, url: "pulsar://" + ln.Addr().String(), ln: ln, reg: reg, mem: mem}
}

// bootstrapNamespaces creates what standalone creates on first start (resources.EnsureDefaults),
// since the broker auto-creates topics only in existing namespaces.
func bootstrapNamespaces(t testing.TB, store metadata.Store) {
	t.Helper()
	if err := resources.New(store).EnsureDefaults(context.Background(), "standalone"); err != nil {
		t.Fatal(err)
	}
}
