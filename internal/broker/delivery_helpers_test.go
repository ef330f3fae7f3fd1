package broker

import (
	"context"
	"net"
	"testing"

	"github.com/apache/pulsar-client-go/pulsar"

	"github.com/magnetar-io/magnetar/internal/config"
	"github.com/magnetar-io/magnetar/internal/ledger"
	"github.com/magnetar-io/magnetar/internal/managedledger"
	"github.com/magnetar-io/magnetar/internal/metadata"
)

// restartable is a broker that can be stopped and started again on the same storage
// (newTestStorage: by default embedded etcd and a bookie on disk, which keep running), so
// tests see what a broker restart keeps: topic records, entries and persisted cursors.
type restartable struct {
	t       *testing.T
	store   metadata.Store
	ledgers ledger.Client
	mutate  func(*config.BrokerConfig)
	s       *Server
	f       *managedledger.Factory
	url     string
}

func startRestartable(t *testing.T, mutate func(*config.BrokerConfig)) *restartable {
	t.Helper()
	store, ledgers := newTestStorage(t, testLogger(t))
	bootstrapNamespaces(t, store)
	r := &restartable{t: t, store: store, ledgers: ledgers, mutate: mutate}
	r.start()
	t.Cleanup(func() {
		if r.s != nil {
			r.stop()
		}
	})
	return r
}

func (r *restartable) start() {
	t := r.t
	t.Helper()
	logger := testLogger(t)
	mlCfg := config.DefaultManagedLedgerConfig()
	mlCfg.EnsembleSize, mlCfg.WriteQuorum, mlCfg.AckQuorum = 1, 1, 1
	f, err := managedledger.NewFactory(managedledger.FactoryOptions{Ledger: r.ledgers, Store: r.store, Config: mlCfg, Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	cfg := config.DefaultBrokerConfig()
	cfg.BindAddress, cfg.AdvertisedAddress, cfg.ServicePort = "127.0.0.1", "127.0.0.1", 0
	cfg.MaxMessageSize = 1 << 20
	if r.mutate != nil {
		r.mutate(&cfg)
	}
	s := newTestServer(t, cfg, r.store, f, logger, nil, nil)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = s.Serve(ln) }()
	r.s, r.f, r.url = s, f, "pulsar://"+ln.Addr().String()
}

// stop closes the broker cleanly (cursors flush their state) and its managed ledgers.
func (r *restartable) stop() {
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	if err := closeServer(ctx, r.s); err != nil {
		r.t.Errorf("broker close: %v", err)
	}
	if err := r.f.Close(ctx); err != nil {
		r.t.Errorf("factory close: %v", err)
	}
	r.s, r.f = nil, nil
}

func (r *restartable) restart() {
	r.stop()
	r.start()
}

// payloads returns the messages' payloads as strings.
func payloads(ms []pulsar.Message) []string {
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = string(m.Payload())
	}
	return out
}
