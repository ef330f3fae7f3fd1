package brokerd

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/magnetar-io/magnetar/internal/admin"
	"github.com/magnetar-io/magnetar/internal/auth"
	"github.com/magnetar-io/magnetar/internal/bookieproto"
	"github.com/magnetar-io/magnetar/internal/broker"
	"github.com/magnetar-io/magnetar/internal/clock"
	"github.com/magnetar-io/magnetar/internal/config"
	"github.com/magnetar-io/magnetar/internal/console"
	"github.com/magnetar-io/magnetar/internal/functions/pkgstore"
	"github.com/magnetar-io/magnetar/internal/kafka"
	"github.com/magnetar-io/magnetar/internal/lakehouse"
	"github.com/magnetar-io/magnetar/internal/ledger"
	"github.com/magnetar-io/magnetar/internal/managedledger"
	"github.com/magnetar-io/magnetar/internal/metadata"
	"github.com/magnetar-io/magnetar/internal/offload"
	"github.com/magnetar-io/magnetar/internal/ownership"
	"github.com/magnetar-io/magnetar/internal/resources"
	"github.com/magnetar-io/magnetar/internal/topics"
)

// ServicesOptions are what the broker services run on.
type ServicesOptions struct {
	Store     metadata.Store
	Resources *resources.Resources
	Broker    config.BrokerConfig
	Ledger    config.LedgerClientConfig
	Registry  *prometheus.Registry
	Logger    *slog.Logger
	// LocalBookies are bookies in this process by advertised address; the bookie client
	// calls them directly instead of over a socket (standalone).
	LocalBookies map[string]bookieproto.Handler
	// Ownership decides which topics the broker serves (nil: every topic, standalone).
	Ownership topics.Ownership
	// HTTPClient calls other brokers' admin API with this broker's credentials (a cluster's
	// topics served elsewhere); nil: http.DefaultClient.
	HTTPClient *http.Client
	// WrapHTTP wraps the admin handler (cluster redirects); nil: none.
	WrapHTTP func(http.Handler) http.Handler
	// DeferReady leaves /status.html answering 503 until MarkReady (a cluster broker is
	// ready once registered, not once listening).
	DeferReady bool
	// Listeners are opened by the caller (nil: Listen on the configured bind address and
	// ports).
	Listeners *Listeners
	// Clock is the broker's clock (retention, TTL, transaction timeouts, delayed delivery);
	// nil: the system clock shifted by Broker.TestClockOffset.
	Clock clock.Clock
}

// Listeners are a broker's sockets: the binary protocol and HTTP, each plaintext and TLS
// (brokerServicePort, brokerServicePortTls, webServicePort, webServicePortTls); a port set
// to -1 has none. The TLS ones are plain TCP listeners: StartServices adds TLS.
type Listeners struct {
	Binary, BinaryTLS, HTTP, HTTPS net.Listener
}

// Listen opens the listeners cfg asks for.
func Listen(cfg config.BrokerConfig) (_ *Listeners, err error) {
	l := &Listeners{}
	defer func() {
		if err != nil {
			l.Close()
		}
	}()
	bind := func(key string, port int, dst *net.Listener) error {
		if port < 0 {
			return nil
		}
		ln, err := net.Listen("tcp", net.JoinHostPort(cfg.BindAddress, strconv.Itoa(port)))
		if err != nil {
			return fmt.Errorf("listen (%s): %w", key, err)
		}
		*dst = ln
		return nil
	}
	sec := cfg.Security
	if err := errors.Join(bind("brokerServicePort", cfg.ServicePort, &l.Binary), bind("brokerServicePortTls", sec.ServicePortTLS, &l.BinaryTLS),
		bind("webServicePort", cfg.WebServicePort, &l.HTTP), bind("webServicePortTls", sec.WebServicePortTLS, &l.HTTPS)); err != nil {
		return nil, err
	}
	if l.Binary == nil && l.BinaryTLS == nil {
		return nil, errors.New("no binary protocol listener: brokerServicePort and brokerServicePortTls are both off")
	}
	if l.HTTP == nil && l.HTTPS == nil {
		return nil, errors.New("no HTTP listener: webServicePort and webServicePortTls are both off")
	}
	return l, nil
}

// Close closes whatever is open.
func (l *Listeners) Close() {
	for _, ln := range []net.Listener{l.Binary, l.BinaryTLS, l.HTTP, l.HTTPS} {
		if ln != nil {
			_ = ln.Close()
		}
	}
}

// Port is ln's port, or -1 without ln.
func Port(ln net.Listener) int {
	if ln == nil {
		return -1
	}
	return ln.Addr().(*net.TCPAddr).Port
}

// Services are a running broker with its storage clients and HTTP server.
type Services struct {
	log      *slog.Logger
	bkClient bookieproto.Client
	ledgers  ledger.Client
	factory  *managedledger.Factory
	// offloader is the broker's tiered storage (nil: no managedLedgerOffloadDriver), pinned
	// in offloadPool, which holds the offloaders of policies naming other drivers/buckets.
	offloader   offload.Offloader
	offloadPool *offload.Pool
	// Topics is the topic service; Broker the Pulsar protocol front end over it.
	Topics *topics.Service
	Broker *broker.Server
	// Kafka is the Kafka protocol front end (nil: kafkaListeners empty); kafka.go.
	Kafka     *kafka.Server
	kafkaAddr string
	// Lakehouse writes topics into Iceberg tables (nil: icebergEnabled off).
	Lakehouse *lakehouse.Service
	// Security is the broker's authentication, authorization and TLS listener config.
	Security *auth.BrokerSecurity
	lns      *Listeners
	http     *http.Server
	ready    atomic.Bool
	served   chan error
}

// StartServices builds bookie client -> ledger client -> managed-ledger factory -> topic
// service -> its front ends (the Pulsar protocol, admin HTTP), and serves them. On error
// whatever started is closed again.
func StartServices(ctx context.Context, o ServicesOptions) (_ *Services, err error) {
	s := &Services{log: o.Logger, served: make(chan error, 4), lns: o.Listeners}
	defer func() {
		if err != nil {
			_ = s.Close(context.Background())
		}
	}()
	bkTLS, err := auth.BookieClientTLS(o.Ledger.TLS, o.Logger)
	if err != nil {
		return nil, fmt.Errorf("bookie client TLS: %w", err)
	}
	s.bkClient = bookieproto.NewClient(bookieproto.ClientOptions{Logger: o.Logger, Local: o.LocalBookies, TLS: bkTLS})
	if s.ledgers, err = ledger.NewClient(ctx, ledger.ClientOptions{
		Config: o.Ledger, Store: o.Store, Bookies: s.bkClient, Logger: o.Logger, Registerer: o.Registry,
	}); err != nil {
		return nil, fmt.Errorf("ledger client: %w", err)
	}
	if s.offloadPool, s.offloader, err = StartOffloadPool(ctx, o.Broker.Offload, o.Logger, o.Registry); err != nil {
		return nil, err
	}
	clk := o.Clock
	if clk == nil {
		clk = clock.Offset(clock.Real, o.Broker.TestClockOffset)
		if o.Broker.TestClockOffset != 0 && o.Logger != nil {
			o.Logger.Warn("test only: the broker's clock is skewed (--test-clock-offset)", "offset", o.Broker.TestClockOffset)
		}
	}
	if s.factory, err = managedledger.NewFactory(managedledger.FactoryOptions{
		Ledger: s.ledgers, Store: o.Store, Config: o.Broker.ManagedLedger, Logger: o.Logger, Registerer: o.Registry, Clock: clk,
		Offloader: s.offloader, OffloadDefaults: offload.PoliciesFromConfig(o.Broker.Offload).Trigger(),
		OffloadPool: s.offloadPool, OffloadPolicies: offload.PoliciesFromConfig(o.Broker.Offload),
	}); err != nil {
		return nil, fmt.Errorf("managed ledgers: %w", err)
	}
	// Permissions are read through a short cache: a burst of lookups is not a burst of
	// metadata reads, and a revocation is seen at most that late (live producers and
	// consumers are rechecked every authorizationRecheckIntervalSeconds).
	pol := auth.CachedPolicies(resources.PermissionSource{R: o.Resources}, policyCacheTTL, policyCacheEntries)
	if s.Security, err = auth.NewBrokerSecurity(o.Broker.Security, pol, o.Logger); err != nil {
		return nil, fmt.Errorf("security: %w", err)
	}
	if s.Topics, err = topics.New(topics.Options{
		Config: o.Broker, Store: o.Store, Ledgers: s.factory, Logger: o.Logger, Registerer: o.Registry, Ownership: o.Ownership,
		Authorizer: topics.NewAuthorizer(s.Security.Authz),
	}); err != nil {
		return nil, fmt.Errorf("topics: %w", err)
	}
	if s.Broker, err = broker.New(o.Broker, broker.Deps{Topics: s.Topics, Logger: o.Logger, Registerer: o.Registry,
		Authn: s.Security.Authn, TLS: s.Security.TLS}); err != nil {
		return nil, fmt.Errorf("broker: %w", err)
	}
	if s.lns == nil {
		if s.lns, err = Listen(o.Broker); err != nil {
			return nil, fmt.Errorf("broker %w", err)
		}
	}
	var tlsConf *tls.Config
	if s.lns.BinaryTLS != nil || s.lns.HTTPS != nil {
		tlsConf = s.Security.TLS.Config() // Validate made sure a certificate is configured
	}
	if s.lns.Binary != nil {
		go func() { s.served <- s.Broker.Serve(s.lns.Binary) }()
	}
	if s.lns.BinaryTLS != nil {
		go func() { s.served <- s.Broker.ServeTLS(tls.NewListener(s.lns.BinaryTLS, tlsConf)) }()
	}
	webAddr := ""
	if s.lns.HTTP != nil {
		webAddr = s.lns.HTTP.Addr().String()
	}
	if o.Broker.Kafka.Enabled() {
		if err := s.startKafka(o); err != nil {
			return nil, err
		}
	}
	if o.Broker.Iceberg.Enabled {
		if s.Lakehouse, err = lakehouse.New(lakehouse.Options{
			Config: o.Broker.Iceberg, Topics: s.Topics, Resources: o.Resources, Logger: o.Logger, Registerer: o.Registry,
		}); err != nil {
			return nil, fmt.Errorf("lakehouse: %w", err)
		}
	}
	var h http.Handler = admin.Handler(admin.Config{
		Resources: o.Resources, Gatherer: o.Registry, Logger: o.Logger, Ready: s.ready.Load,
		Topics: s.Topics, ServiceURL: s.Broker.ServiceURL, ServiceURLTLS: s.Broker.ServiceURLTLS, Storage: storageView{o.Store},
		Cluster: o.Broker.ClusterName, WebServiceAddr: webAddr, WebServiceAddrTLS: addrOf(s.lns.HTTPS), Pprof: o.Broker.EnablePprof,
		Schemas: s.Topics.Schemas(), Dynamic: s.Topics.DynamicConfig(),
		MaxMessageSize: o.Broker.MaxMessageSize, Transactions: s.Broker.Coordinators(),
		ForceDeleteNamespaceAllowed: o.Broker.ForceDeleteNamespaceAllowed, ForceDeleteTenantAllowed: o.Broker.ForceDeleteTenantAllowed,
		HTTPClient: o.HTTPClient, Packages: packagesOf(o.Broker.Packages, s.ledgers), PackagesMaxBytes: o.Broker.Packages.MaxSizeMB << 20,
	})
	if o.Broker.Console.Enabled {
		h = console.Mount(h, console.Options{ReadOnly: o.Broker.Console.ReadOnly})
	}
	if s.Lakehouse != nil {
		// admin.Secure below authenticates and authorizes the catalog (admin/secure.go:
		// icebergRule: consume on a table's topic) and the iceberg admin paths.
		h = s.Lakehouse.Mount(h, lakehouse.HTTPOptions{})
	}
	if o.WrapHTTP != nil {
		h = o.WrapHTTP(h)
	}
	// Outermost, so every route (the cluster ones the ownership layer serves included) is
	// authenticated and authorized.
	h = admin.Secure(h, admin.SecureConfig{Authn: s.Security.Authn, Authz: s.Security.Authz,
		AuthenticateMetrics: o.Broker.Security.AuthenticateMetricsEndpoint})
	s.http = &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second, TLSConfig: tlsConf}
	if o.Logger != nil {
		// Failed handshakes (a client of another CA) are the client's problem: debug, not stderr.
		s.http.ErrorLog = slog.NewLogLogger(o.Logger.Handler(), slog.LevelDebug)
	}
	if s.lns.HTTP != nil {
		go func() { s.served <- s.http.Serve(s.lns.HTTP) }()
	}
	if s.lns.HTTPS != nil {
		go func() { s.served <- s.http.ServeTLS(s.lns.HTTPS, "", "") }()
	}
	s.ready.Store(!o.DeferReady)
	return s, nil
}

// MarkReady makes /status.html and the health checks answer OK.
func (s *Services) MarkReady() { s.ready.Store(true) }

// Policy cache of authorization (see StartServices).
const (
	policyCacheTTL     = 2 * time.Second
	policyCacheEntries = 10000
)

func addrOf(ln net.Listener) string {
	if ln == nil {
		return ""
	}
	return ln.Addr().String()
}

// BrokerAddr is the binary protocol listener's address ("" without a plaintext one).
func (s *Services) BrokerAddr() string { return addrOf(s.lns.Binary) }

// BrokerAddrTLS is the TLS binary protocol listener's address ("" without one).
func (s *Services) BrokerAddrTLS() string { return addrOf(s.lns.BinaryTLS) }

// HTTPSAddr is the HTTPS listener's address ("" without one).
func (s *Services) HTTPSAddr() string { return addrOf(s.lns.HTTPS) }

// Ledgers is the ledger client (the functions worker stores packages with it).
func (s *Services) Ledgers() ledger.Client { return s.ledgers }

// LoadStats is what a load report carries: the topic service's counts and the front end's
// connections (ownership.Manager.Register).
func (s *Services) LoadStats() ownership.LoadStats {
	st := s.Topics.LoadStats()
	st.Connections = s.Broker.Connections()
	return st
}

// ManagedLedgers is the managed-ledger factory (the SQL server's read-only snapshots).
func (s *Services) ManagedLedgers() *managedledger.Factory { return s.factory }

// HTTPAddr is the HTTP listener's address ("" without a plaintext one).
func (s *Services) HTTPAddr() string { return addrOf(s.lns.HTTP) }

// Failed delivers an error if the broker or HTTP server stops serving on its own.
func (s *Services) Failed() <-chan error { return s.served }

// Close stops HTTP, the Pulsar front end (clients are told), the topic service (pending
// publishes complete while storage is still there), then the managed ledgers and storage
// clients.
func (s *Services) Close(ctx context.Context) error {
	s.ready.Store(false)
	var errs []error
	if s.http != nil {
		shutCtx, cancel := context.WithTimeout(ctx, 5*time.Second)
		errs = append(errs, ignoreClosed(s.http.Shutdown(shutCtx)))
		cancel()
	}
	if s.Kafka != nil {
		errs = append(errs, s.Kafka.Close())
	}
	if s.Broker != nil {
		errs = append(errs, s.Broker.Close(ctx))
	}
	if s.Lakehouse != nil {
		errs = append(errs, s.Lakehouse.Close())
	}
	if s.Topics != nil {
		errs = append(errs, s.Topics.Close(ctx))
	}
	// Serve closes its listener on shutdown, but a start that failed after listening never
	// reached Serve; closing again is harmless.
	if s.lns != nil {
		s.lns.Close()
	}
	if s.factory != nil {
		errs = append(errs, s.factory.Close(ctx))
	}
	if s.offloadPool != nil {
		errs = append(errs, s.offloadPool.Close())
	}
	if s.offloader != nil {
		errs = append(errs, s.offloader.Close())
	}
	if s.ledgers != nil {
		errs = append(errs, s.ledgers.Close())
	}
	if s.bkClient != nil {
		errs = append(errs, s.bkClient.Close())
	}
	return errors.Join(errs...)
}

func ignoreClosed(err error) error {
	if errors.Is(err, http.ErrServerClosed) || errors.Is(err, net.ErrClosed) {
		return nil
	}
	return err
}

// packagesOf is the packages API's storage: the function packages' ledger format, with
// packagesReplicas copies; nil (the API answers 503) without enablePackagesManagement.
func packagesOf(c config.PackagesConfig, lc ledger.Client) admin.PackageBlobs {
	if !c.Enabled {
		return nil
	}
	return &pkgstore.Ledgers{Client: lc, Replicas: c.Replicas}
}
