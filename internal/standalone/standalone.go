package standalone

import (
	"context"
	"crypto/tls"
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

	"github.com/magnetar-io/magnetar/internal/admin"
	"github.com/magnetar-io/magnetar/internal/auth"
	"github.com/magnetar-io/magnetar/internal/bookie"
	"github.com/magnetar-io/magnetar/internal/bookie/storage"
	"github.com/magnetar-io/magnetar/internal/bookieproto"
	"github.com/magnetar-io/magnetar/internal/brokerd"
	"github.com/magnetar-io/magnetar/internal/config"
	"github.com/magnetar-io/magnetar/internal/functions"
	"github.com/magnetar-io/magnetar/internal/functions/pkgstore"
	"github.com/magnetar-io/magnetar/internal/metadata"
	"github.com/magnetar-io/magnetar/internal/metadata/etcdstore"
	"github.com/magnetar-io/magnetar/internal/metadata/localstore"
	"github.com/magnetar-io/magnetar/internal/resources"
	"github.com/magnetar-io/magnetar/internal/sqlworker"
	"github.com/magnetar-io/magnetar/internal/topics"
)

// Standalone is a running single-process Magnetar.
type Standalone struct {
	cfg      config.StandaloneConfig
	log      *slog.Logger
	registry *prometheus.Registry

	metadataKind string
	etcd         *etcdstore.Embedded // only with standaloneMetadataStore=etcd
	store        metadata.Store
	bookie       *bookie.Bookie
	svc          *brokerd.Services
	fnw          *functions.Worker
	sql          *sqlworker.Worker
	internal     *internalTLS // with authentication on (security.go)
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
	applyKafkaDefault(&cfg)
	s := &Standalone{cfg: cfg, log: logger.With("component", "standalone"), registry: prometheus.NewRegistry()}
	s.registry.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	defer func() {
		if err != nil {
			_ = s.Close(context.Background())
		}
	}()

	if cfg.Broker.Security.Authn.Enabled {
		if s.internal, err = newInternalTLS(cfg.DataDir); err != nil {
			return nil, err
		}
	}
	if err := s.openMetadata(ctx); err != nil {
		return nil, err
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
	if s.internal != nil {
		s.internal.bookie(&bkCfg)
	}
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
		// The worker calls the broker's admin REST (cleanupSubscription) with the broker's own
		// client credentials, as its instances connect.
		httpc, herr := auth.BrokerClientHTTP(cfg.Broker.Security.Client, logger)
		if herr != nil {
			return nil, fmt.Errorf("standalone: brokerClient settings: %w", herr)
		}
		if s.fnw, err = functions.Start(ctx, functions.Options{
			Config: cfg.Functions, Store: s.store, Packages: &pkgstore.Ledgers{Client: s.svc.Ledgers(), Replicas: cfg.Functions.NumFunctionPackageReplicas}, Resources: res, ClusterName: cfg.Broker.ClusterName,
			BrokerServiceURL: "pulsar://" + s.svc.BrokerAddr(), WebServiceURL: "http://" + s.svc.HTTPAddr(),
			BrokerWebServiceURL: "http://" + s.svc.HTTPAddr(), HTTPClient: httpc, AuthorizePackage: admin.PackageUse(s.svc.Security.Authz),
			DataDir: cfg.DataDir, Logger: logger, Registerer: s.registry,
			// Instances connect with the broker's own client credentials (brokerClient*).
			InstanceAuthPlugin: cfg.Broker.Security.Client.AuthenticationPlugin, InstanceAuthParams: cfg.Broker.Security.Client.AuthenticationParameters,
			InstanceTLSTrustCertsFile: cfg.Broker.Security.Client.TrustCertsFilePath, InstanceTLSVerifyHostname: cfg.Broker.Security.Client.HostnameVerification,
		}); err != nil {
			return nil, fmt.Errorf("standalone: functions worker: %w", err)
		}
		mount.Set(s.fnw)
	}
	if cfg.SQL.Enabled {
		sqlCfg := cfg.SQL
		sqlCfg.ServicePort = cfg.SQLPort()
		if s.sql, err = sqlworker.Start(sqlworker.Options{
			Config: sqlCfg, BindAddress: cfg.Broker.BindAddress, Store: s.store, Resources: res,
			Schemas: s.svc.Topics.Schemas(), Logs: s.svc.ManagedLedgers(), Logger: logger, Registerer: s.registry,
			// The broker's own authentication and authorization: a SQL login is a Pulsar
			// token (or basic password) and a table read needs the consume permission.
			// TLS with the broker's certificate keys (nil when none is configured).
			Auth: s.svc.Security.Authn, Authz: s.svc.Security.Authz, TLS: s.svc.Security.TLS,
		}); err != nil {
			return nil, fmt.Errorf("standalone: %w", err)
		}
	}
	// The one readiness line. Its status text is the line Pulsar's standalone logs when it is
	// ready, which the testcontainers Pulsar modules (Go, Java, .NET) wait for.
	s.log.Info(ReadyMessage, "status", PulsarReadyText,
		"broker", urlOf("pulsar", s.svc.BrokerAddr()), "brokerTls", urlOf("pulsar+ssl", s.svc.BrokerAddrTLS()),
		"http", urlOf("http", s.svc.HTTPAddr()), "https", urlOf("https", s.svc.HTTPSAddr()), "kafka", s.svc.KafkaAddr(),
		"sql", s.SQLAddr(), "dataDir", cfg.DataDir, "metadataStore", s.metadataKind, "startup", time.Since(began).Round(time.Millisecond))
	return s, nil
}

// DefaultKafkaListener is where a standalone on Pulsar's default ports serves Kafka when
// kafkaListeners is not set.
const DefaultKafkaListener = "PLAINTEXT://127.0.0.1:9092"

// applyKafkaDefault turns the Kafka protocol on in a standalone that runs on the default
// Pulsar port (6650) without kafkaListeners: the Pulsar-and-Kafka-on-one-laptop case. A
// standalone moved to other ports (tests, several on one machine) serves Kafka only where
// kafkaListeners says, so it never takes 9092 behind its user's back.
func applyKafkaDefault(cfg *config.StandaloneConfig) {
	if !cfg.Broker.Kafka.Enabled() && cfg.Broker.ServicePort == config.DefaultBrokerConfig().ServicePort {
		cfg.Broker.Kafka.Listeners = DefaultKafkaListener
	}
}

// KafkaAddr is the advertised Kafka listener ("" when Kafka is off).
func (s *Standalone) KafkaAddr() string { return s.svc.KafkaAddr() }

// The readiness line: message and the status attribute it carries.
const (
	ReadyMessage    = "magnetar standalone ready"
	PulsarReadyText = "Successfully updated the policies on namespace public/default"
)

// ErrMetadataStoreMismatch: the data directory holds the other kind of metadata store than
// standaloneMetadataStore asks for.
var ErrMetadataStoreMismatch = errors.New("standalone: the data directory holds another metadata store")

// openMetadata opens the local store, or starts the embedded etcd member and connects to it.
func (s *Standalone) openMetadata(ctx context.Context) error {
	kind, err := metadataKind(s.cfg)
	if err != nil {
		return err
	}
	s.metadataKind = kind
	if kind == config.MetadataStoreLocal {
		if s.store, err = localstore.Open(s.cfg.LocalMetadataDir(), localstore.Options{MaxBytes: s.cfg.MetadataQuotaBytes}, s.log); err != nil {
			return fmt.Errorf("standalone: metadata: %w", err)
		}
		return nil
	}
	mdCfg := config.DefaultMetadataConfig()
	mdCfg.Name = "standalone"
	mdCfg.DataDir = s.cfg.MetadataDir()
	mdCfg.ListenClientURLs = []string{s.cfg.MetadataListenClient}
	mdCfg.ListenPeerURLs = []string{s.cfg.MetadataListenPeer}
	mdCfg.QuotaBackendBytes = s.cfg.MetadataQuotaBytes
	var clientTLS *tls.Config
	if s.internal != nil {
		s.internal.metadata(&mdCfg)
		clientTLS = s.internal.clientTLS
	}
	if s.etcd, err = etcdstore.StartEmbedded(ctx, mdCfg, s.log); err != nil {
		return fmt.Errorf("standalone: metadata: %w", err)
	}
	if s.store, err = s.etcd.OpenTLS(ctx, clientTLS, s.log); err != nil {
		return fmt.Errorf("standalone: metadata client: %w", err)
	}
	return nil
}

// metadataKind is the metadata store to use: the configured one, or for "" whichever the
// data directory holds (local for a new one). Asking for one kind over a directory that
// holds only the other is an error rather than an empty cluster: the topics would seem lost.
func metadataKind(cfg config.StandaloneConfig) (string, error) {
	hasEtcd := exists(cfg.EtcdMemberDir())
	hasLocal := exists(cfg.LocalMetadataDir())
	switch {
	case cfg.MetadataStore == "" && hasEtcd && !hasLocal:
		return config.MetadataStoreEtcd, nil
	case cfg.MetadataStore == "":
		return config.MetadataStoreLocal, nil
	case cfg.MetadataStore == config.MetadataStoreLocal && hasEtcd && !hasLocal:
		return "", fmt.Errorf("%w: %s holds an embedded etcd member's metadata; run with standaloneMetadataStore=etcd (--metadata-store etcd) or unset, or use a new data directory",
			ErrMetadataStoreMismatch, cfg.EtcdMemberDir())
	case cfg.MetadataStore == config.MetadataStoreEtcd && hasLocal && !hasEtcd:
		return "", fmt.Errorf("%w: %s holds the local metadata store; run with standaloneMetadataStore=local (--metadata-store local) or unset, or use a new data directory",
			ErrMetadataStoreMismatch, cfg.LocalMetadataDir())
	}
	return cfg.MetadataStore, nil
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
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

// SQLAddr is the SQL server's MySQL protocol address ("" when sqlEnabled is off).
func (s *Standalone) SQLAddr() string {
	if s.sql == nil {
		return ""
	}
	return s.sql.Addr()
}

// SQL is the SQL server (nil when sqlEnabled is off).
func (s *Standalone) SQL() *sqlworker.Worker { return s.sql }

// Topics is the topic service (tests read topics through it as the front ends do).
func (s *Standalone) Topics() *topics.Service { return s.svc.Topics }

// BrokerAddrTLS is the TLS binary listener's address ("" without brokerServicePortTls).
func (s *Standalone) BrokerAddrTLS() string { return s.svc.BrokerAddrTLS() }

// HTTPSAddr is the HTTPS listener's address ("" without webServicePortTls).
func (s *Standalone) HTTPSAddr() string { return s.svc.HTTPSAddr() }

// Store is the metadata store client.
func (s *Standalone) Store() metadata.Store { return s.store }

// Failed delivers an error if the broker or HTTP server stops serving on its own.
func (s *Standalone) Failed() <-chan error { return s.svc.Failed() }

// Close stops everything in reverse start order. The broker closes first so clients are told
// and pending publishes complete while storage is still there.
func (s *Standalone) Close(ctx context.Context) error {
	var errs []error
	if s.sql != nil {
		errs = append(errs, s.sql.Close())
	}
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

// urlOf is scheme://addr, or "off" without a listener.
func urlOf(scheme, addr string) string {
	if addr == "" {
		return "off"
	}
	return scheme + "://" + addr
}
