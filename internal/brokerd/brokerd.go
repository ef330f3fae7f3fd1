package brokerd

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/magnetar-io/magnetar/internal/admin"
	"github.com/magnetar-io/magnetar/internal/auth"
	"github.com/magnetar-io/magnetar/internal/broker"
	"github.com/magnetar-io/magnetar/internal/config"
	"github.com/magnetar-io/magnetar/internal/functions"
	"github.com/magnetar-io/magnetar/internal/functions/pkgstore"
	"github.com/magnetar-io/magnetar/internal/metadata"
	"github.com/magnetar-io/magnetar/internal/metadata/connect"
	"github.com/magnetar-io/magnetar/internal/ownership"
	"github.com/magnetar-io/magnetar/internal/resources"
)

// Broker is a running `magnetar broker`: one member of a cluster of brokers sharing an etcd
// and its bookies.
type Broker struct {
	log   *slog.Logger
	store metadata.Store
	own   *ownership.Manager
	svc   *Services
	fnw   *functions.Worker
}

// Start connects to the metadata store, creates the cluster's default tenant and namespace
// when missing, starts the broker services with bundle ownership, and registers the broker
// once it serves. On error whatever started is stopped again.
func Start(ctx context.Context, cfg config.BrokerRoleConfig, logger *slog.Logger) (_ *Broker, err error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	began := time.Now()
	b := &Broker{log: logger.With("component", "brokerd")}
	defer func() {
		if err != nil {
			_ = b.Close(context.Background())
		}
	}()
	mdTLS, err := auth.MetadataClientTLS(cfg.MetadataTLS, logger)
	if err != nil {
		return nil, err
	}
	if b.store, err = connect.OpenTLS(ctx, cfg.MetadataStoreURL, mdTLS, logger); err != nil {
		return nil, fmt.Errorf("broker: metadata store: %w", err)
	}
	res := resources.New(b.store).WithDefaultBundles(cfg.Cluster.NumBundles)
	if err := res.EnsureDefaults(ctx, cfg.Broker.ClusterName); err != nil {
		return nil, fmt.Errorf("broker: bootstrap: %w", err)
	}
	// Listen first: the advertised URLs other brokers redirect to carry the actual ports.
	lns, err := Listen(cfg.Broker)
	if err != nil {
		return nil, fmt.Errorf("broker: %w", err)
	}
	// Registered URLs: a broker with only TLS listeners registers them in place of the
	// plaintext ones too (the registration key and redirects need one).
	url := func(scheme string, ln net.Listener) string {
		if ln == nil {
			return ""
		}
		return scheme + "://" + broker.AdvertisedAddr(cfg.Broker, ln.Addr())
	}
	brokerURL, brokerURLTLS := url("pulsar", lns.Binary), url("pulsar+ssl", lns.BinaryTLS)
	httpURL, httpURLTLS := url("http", lns.HTTP), url("https", lns.HTTPS)
	if brokerURL == "" {
		brokerURL = brokerURLTLS
	}
	if httpURL == "" || (cfg.Broker.Security.Client.TLSEnabled && httpURLTLS != "") {
		// Brokers call each other at this URL (brokerClientTlsEnabled: over TLS).
		httpURL = httpURLTLS
	}
	// Towards other brokers (the leader, a shed bundle's owner) the broker is a client with
	// its own credentials (brokerClient* keys); superuserRoles must name its role.
	httpc, err := auth.BrokerClientHTTP(cfg.Broker.Security.Client, logger)
	if err != nil {
		lns.Close()
		return nil, fmt.Errorf("broker: brokerClient settings: %w", err)
	}
	maxTopics, maxSessions, maxBundles := cfg.Cluster.SplitLimits()
	if b.own, err = ownership.Start(ctx, ownership.Options{
		Store: b.store, Resources: res,
		BrokerURL: brokerURL, BrokerURLTLS: brokerURLTLS, HTTPURL: httpURL, HTTPURLTLS: httpURLTLS,
		HTTPClient:         httpc,
		TTL:                cfg.Cluster.SessionTimeout(),
		LoadReportInterval: time.Duration(cfg.Cluster.LoadReportIntervalMillis) * time.Millisecond,
		ShedInterval:       cfg.Cluster.ShedInterval(),
		Split:              loadManagerSplit(cfg.Cluster, ownership.SplitLimits{MaxTopics: maxTopics, MaxSessions: maxSessions, MaxBundles: maxBundles}),
		Score:              loadManagerScore(cfg.Cluster.LoadManager),
		Shed:               loadManagerShed(cfg.Cluster.LoadManager),
		Logger:             logger,
	}); err != nil {
		lns.Close()
		return nil, fmt.Errorf("broker: %w", err)
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	// The functions paths go to the worker (503 until it runs, or always without
	// functionsWorkerEnabled); the rest to ownership's redirects and the admin API.
	mount := &functions.Mount{}
	wrap := func(h http.Handler) http.Handler { return mount.Wrap(b.own.Handler(h)) }
	if b.svc, err = StartServices(ctx, ServicesOptions{
		Store: b.store, Resources: res, Broker: cfg.Broker, Ledger: cfg.Ledger, Registry: reg, Logger: logger,
		Ownership: b.own, WrapHTTP: wrap, Listeners: lns, DeferReady: true, HTTPClient: httpc,
	}); err != nil {
		return nil, fmt.Errorf("broker: %w", err)
	}
	b.own.SetUnloader(b.svc.Topics)
	if err := b.own.Register(ctx, b.svc.LoadStats); err != nil {
		return nil, fmt.Errorf("broker: %w", err)
	}
	if cfg.FunctionsWorkerEnabled {
		self := b.own.Self()
		brokerURL, webURL := self.NativeURL, self.HTTPURL
		if u := cfg.Functions.PulsarServiceURL; u != "" {
			brokerURL = u
		}
		if b.fnw, err = functions.Start(ctx, functions.Options{
			Config: cfg.Functions, Store: b.store, Resources: res, ClusterName: cfg.Broker.ClusterName,
			Packages:         &pkgstore.Ledgers{Client: b.svc.Ledgers(), Replicas: cfg.Functions.NumFunctionPackageReplicas},
			BrokerServiceURL: brokerURL, WebServiceURL: webURL, DataDir: cfg.FunctionsDataDir, Logger: logger, Registerer: reg,
			BrokerWebServiceURL: webURL, HTTPClient: httpc, AuthorizePackage: admin.PackageUse(b.svc.Security.Authz),
			// Instances connect with the broker's own client credentials (brokerClient*).
			InstanceAuthPlugin: cfg.Broker.Security.Client.AuthenticationPlugin, InstanceAuthParams: cfg.Broker.Security.Client.AuthenticationParameters,
			InstanceTLSTrustCertsFile: cfg.Broker.Security.Client.TrustCertsFilePath, InstanceTLSVerifyHostname: cfg.Broker.Security.Client.HostnameVerification,
		}); err != nil {
			return nil, fmt.Errorf("broker: functions worker: %w", err)
		}
		mount.Set(b.fnw)
	}
	b.svc.MarkReady()
	b.log.Info("magnetar broker ready", "broker", b.own.Self().NativeURL, "http", b.own.Self().HTTPURL, "kafka", b.svc.KafkaAddr(),
		"metadata", cfg.MetadataStoreURL, "startup", time.Since(began).Round(time.Millisecond))
	return b, nil
}

// BrokerAddr is the binary protocol listener's address.
func (b *Broker) BrokerAddr() string { return b.svc.BrokerAddr() }

// HTTPAddr is the HTTP listener's address.
func (b *Broker) HTTPAddr() string { return b.svc.HTTPAddr() }

// Ownership is the broker's bundle ownership manager.
func (b *Broker) Ownership() *ownership.Manager { return b.own }

// Failed delivers an error if the broker or HTTP server stops serving on its own.
func (b *Broker) Failed() <-chan error { return b.svc.Failed() }

// Close releases the broker's bundles first (topics unloaded, clients told to look them up
// again, ownership keys deleted) so clients move to other brokers without errors, then stops
// the services and the metadata client.
func (b *Broker) Close(ctx context.Context) error {
	var errs []error
	if b.fnw != nil {
		// First, while the broker still serves: instances flush and checkpoint through it.
		errs = append(errs, b.fnw.Close())
	}
	if b.own != nil {
		errs = append(errs, b.own.Release(ctx))
	}
	if b.svc != nil {
		errs = append(errs, b.svc.Close(ctx))
	}
	if b.store != nil {
		errs = append(errs, b.store.Close())
	}
	b.log.Info("magnetar broker stopped")
	return errors.Join(errs...)
}
