package standalone

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/magnetar-io/magnetar/internal/bookie"
	"github.com/magnetar-io/magnetar/internal/bookie/storage"
	"github.com/magnetar-io/magnetar/internal/bookieproto"
	"github.com/magnetar-io/magnetar/internal/brokerd"
	"github.com/magnetar-io/magnetar/internal/config"
	"github.com/magnetar-io/magnetar/internal/functions"
	"github.com/magnetar-io/magnetar/internal/functions/pkgstore"
	"github.com/magnetar-io/magnetar/internal/metadata"
	"github.com/magnetar-io/magnetar/internal/metadata/etcdstore"
	"github.com/magnetar-io/magnetar/internal/resources"
)

// Standalone is a running single-process Magnetar.
type Standalone struct {
	cfg      config.StandaloneConfig
	log      *slog.Logger
	registry *prometheus.Registry

	etcd   *etcdstore.Embedded
	store  metadata.Store
	bookie *bookie.Bookie
	svc    *brokerd.Services
	fnw    *functions.Worker
}

// Start brings every component up and returns when the broker and HTTP server accept
// connections. On error, whatever was started is stopped again.
func Start(ctx context.Context, cfg config.StandaloneConfig, logger *slog.Logger) (_ *Standalone, err error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	began := time.Now()
	s := &Standalone{cfg: cfg, log: logger.With("component", "standalone"), registry: prometheus.NewRegistry()}
	s.registry.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	defer func() {
		if err != nil {
			_ = s.Close(context.Background())
		}
	}()

	mdCfg := config.DefaultMetadataConfig()
	mdCfg.Name = "standalone"
	mdCfg.DataDir = cfg.MetadataDir()
	mdCfg.ListenClientURLs = []string{cfg.MetadataListenClient}
	mdCfg.ListenPeerURLs = []string{cfg.MetadataListenPeer}
	if s.etcd, err = etcdstore.StartEmbedded(ctx, mdCfg, logger); err != nil {
		return nil, fmt.Errorf("standalone: metadata: %w", err)
	}
	if s.store, err = s.etcd.Open(ctx, logger); err != nil {
		return nil, fmt.Errorf("standalone: metadata client: %w", err)
	}
	res := resources.New(s.store)
	if err := res.EnsureDefaults(ctx, cfg.Broker.ClusterName); err != nil {
		return nil, fmt.Errorf("standalone: bootstrap: %w", err)
	}

	bkCfg := config.DefaultBookieConfig()
	bkCfg.Storage = cfg.Storage
	bkLn, err := listenBookie(cfg)
	if err != nil {
		return nil, err
	}
	bkCfg.ListenAddress = bkLn.Addr().String()
	openStorage := func(c config.BookieStorageConfig, l *slog.Logger, r prometheus.Registerer) (storage.Storage, error) {
		return storage.Open(c, l, r)
	}
	if s.bookie, err = bookie.Start(ctx, bkCfg, bookie.Options{
		Logger: logger, Registerer: s.registry, Metadata: s.store, OpenStorage: openStorage, Listener: bkLn,
	}); err != nil {
		_ = bkLn.Close()
		return nil, fmt.Errorf("standalone: bookie: %w", err)
	}

	mount := &functions.Mount{}
	if s.svc, err = brokerd.StartServices(ctx, brokerd.ServicesOptions{
		Store: s.store, Resources: res, Broker: cfg.Broker, Ledger: cfg.Ledger, Registry: s.registry, Logger: logger,
		LocalBookies: map[string]bookieproto.Handler{s.bookie.AdvertisedAddr(): s.bookie.Local()},
		WrapHTTP:     mount.Wrap,
	}); err != nil {
		return nil, fmt.Errorf("standalone: %w", err)
	}
	if cfg.FunctionsWorkerEnabled {
		if s.fnw, err = functions.Start(ctx, functions.Options{
			Config: cfg.Functions, Store: s.store, Packages: &pkgstore.Ledgers{Client: s.svc.Ledgers(), Replicas: cfg.Functions.NumFunctionPackageReplicas}, Resources: res, ClusterName: cfg.Broker.ClusterName,
			BrokerServiceURL: "pulsar://" + s.svc.BrokerAddr(), WebServiceURL: "http://" + s.svc.HTTPAddr(),
			DataDir: cfg.DataDir, Logger: logger,
		}); err != nil {
			return nil, fmt.Errorf("standalone: functions worker: %w", err)
		}
		mount.Set(s.fnw)
	}
	s.log.Info("magnetar standalone ready",
		"broker", "pulsar://"+s.svc.BrokerAddr(), "http", "http://"+s.svc.HTTPAddr(),
		"dataDir", cfg.DataDir, "startup", time.Since(began).Round(time.Millisecond))
	return s, nil
}

// bookieAddressFile remembers the port a standalone bookie configured with port 0 got, so a
// restart listens there again: ledger metadata names bookies by address, so a bookie that
// came back elsewhere would leave every earlier ledger unreadable.
const bookieAddressFile = "address"

// listenBookie listens on the configured bookie address, or, for port 0, on the address the
// first start of this data directory was given.
func listenBookie(cfg config.StandaloneConfig) (net.Listener, error) {
	addr := cfg.BookieAddress
	_, port, _ := net.SplitHostPort(addr)
	remembered := filepath.Join(cfg.DataDir, "bookie", bookieAddressFile)
	if port == "0" {
		if b, err := os.ReadFile(remembered); err == nil {
			addr = strings.TrimSpace(string(b))
		}
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("standalone: bookie listen on %s (standaloneBookieAddress; ledgers written before name this address): %w", addr, err)
	}
	if port == "0" {
		err := os.MkdirAll(filepath.Dir(remembered), 0o755)
		if err == nil {
			err = os.WriteFile(remembered, []byte(ln.Addr().String()+"\n"), 0o644)
		}
		if err != nil {
			_ = ln.Close()
			return nil, fmt.Errorf("standalone: remembering the bookie address: %w", err)
		}
	}
	return ln, nil
}

// BrokerAddr is the binary protocol address ("host:port") clients connect to.
func (s *Standalone) BrokerAddr() string { return s.svc.BrokerAddr() }

// HTTPAddr is the admin/metrics HTTP address ("host:port").
func (s *Standalone) HTTPAddr() string { return s.svc.HTTPAddr() }

// Store is the metadata store client.
func (s *Standalone) Store() metadata.Store { return s.store }

// Failed delivers an error if the broker or HTTP server stops serving on its own.
func (s *Standalone) Failed() <-chan error { return s.svc.Failed() }

// Close stops everything in reverse start order. The broker closes first so clients are told
// and pending publishes complete while storage is still there.
func (s *Standalone) Close(ctx context.Context) error {
	var errs []error
	if s.fnw != nil {
		errs = append(errs, s.fnw.Close())
	}
	if s.svc != nil {
		errs = append(errs, s.svc.Close(ctx))
	}
	if s.bookie != nil {
		errs = append(errs, s.bookie.Close())
	}
	if s.store != nil {
		errs = append(errs, s.store.Close())
	}
	if s.etcd != nil {
		s.etcd.Close()
	}
	s.log.Info("magnetar standalone stopped")
	return errors.Join(errs...)
}
