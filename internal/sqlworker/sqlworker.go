package sqlworker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/magnetar-io/magnetar/internal/auth"
	"github.com/magnetar-io/magnetar/internal/bookieproto"
	"github.com/magnetar-io/magnetar/internal/brokerd"
	"github.com/magnetar-io/magnetar/internal/config"
	"github.com/magnetar-io/magnetar/internal/ledger"
	"github.com/magnetar-io/magnetar/internal/managedledger"
	"github.com/magnetar-io/magnetar/internal/metadata"
	"github.com/magnetar-io/magnetar/internal/metadata/connect"
	"github.com/magnetar-io/magnetar/internal/offload"
	"github.com/magnetar-io/magnetar/internal/resources"
	"github.com/magnetar-io/magnetar/internal/schema"
	sqlfe "github.com/magnetar-io/magnetar/internal/sql"
)

// Options are what the SQL server of a process reads through.
type Options struct {
	Config      config.SQLConfig
	BindAddress string
	Store       metadata.Store
	Resources   *resources.Resources
	Schemas     *schema.Registry
	Logs        *managedledger.Factory
	Auth        *auth.Service
	Authz       *auth.Authorizer
	// TLS lets clients switch to TLS (the broker's certificate keys; nil: plain TCP only).
	TLS        *auth.ServerTLS
	Logger     *slog.Logger
	Registerer prometheus.Registerer
	// Listener is where to serve (nil: BindAddress and Config.ServicePort).
	Listener net.Listener
}

// Worker is a running SQL server.
type Worker struct {
	srv    *sqlfe.Server
	ln     net.Listener
	served chan error
	// close releases what StartRole built (nil under standalone).
	close func() error
}

// Start serves SQL over o's storage.
func Start(o Options) (*Worker, error) {
	srv, err := sqlfe.New(sqlfe.Options{
		Config: o.Config, Source: &storage{res: o.Resources, schemas: o.Schemas, logs: o.Logs},
		Auth: o.Auth, Authz: o.Authz, TLS: o.TLS, Logger: o.Logger, Registerer: o.Registerer,
	})
	if err != nil {
		return nil, err
	}
	ln := o.Listener
	if ln == nil {
		addr := net.JoinHostPort(o.BindAddress, strconv.Itoa(o.Config.ServicePort))
		if ln, err = net.Listen("tcp", addr); err != nil {
			return nil, fmt.Errorf("sql: listen on %s (sqlServicePort; sqlEnabled=false turns SQL off): %w", addr, err)
		}
	}
	w := &Worker{srv: srv, ln: ln, served: make(chan error, 1)}
	go func() { w.served <- srv.Serve(ln) }()
	if o.Logger != nil {
		o.Logger.Info("sql server ready", "addr", ln.Addr().String(), "protocol", "mysql",
			"tls", o.TLS != nil, "tlsRequired", o.Config.RequireSecureTransport)
	}
	return w, nil
}

// Addr is the MySQL protocol address ("host:port").
func (w *Worker) Addr() string { return w.ln.Addr().String() }

// Server is the SQL front end (tests read its scan statistics).
func (w *Worker) Server() *sqlfe.Server { return w.srv }

// Failed delivers an error if the server stops serving on its own.
func (w *Worker) Failed() <-chan error { return w.served }

// Close stops the server (and, for the role, its storage clients).
func (w *Worker) Close() error {
	err := w.srv.Close()
	if w.close != nil {
		err = errors.Join(err, w.close())
	}
	return err
}

// StartRole runs `magnetar sql-worker`: its own metadata, bookie and ledger clients and
// tiered storage, reading what the brokers wrote without owning anything.
func StartRole(ctx context.Context, cfg config.SQLWorkerConfig, log *slog.Logger, reg *prometheus.Registry) (_ *Worker, err error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	var closers []func() error
	defer func() {
		if err != nil {
			for i := len(closers) - 1; i >= 0; i-- {
				_ = closers[i]()
			}
		}
	}()
	mdTLS, err := auth.MetadataClientTLS(cfg.MetadataTLS, log)
	if err != nil {
		return nil, fmt.Errorf("metadata client TLS: %w", err)
	}
	store, err := connect.OpenTLS(ctx, cfg.MetadataStoreURL, mdTLS, log)
	if err != nil {
		return nil, fmt.Errorf("metadata store: %w", err)
	}
	closers = append(closers, store.Close)
	bkTLS, err := auth.BookieClientTLS(cfg.Ledger.TLS, log)
	if err != nil {
		return nil, fmt.Errorf("bookie client TLS: %w", err)
	}
	bk := bookieproto.NewClient(bookieproto.ClientOptions{Logger: log, TLS: bkTLS})
	closers = append(closers, bk.Close)
	lc, err := ledger.NewClient(ctx, ledger.ClientOptions{Config: cfg.Ledger, Store: store, Bookies: bk, Logger: log, Registerer: reg})
	if err != nil {
		return nil, fmt.Errorf("ledger client: %w", err)
	}
	closers = append(closers, lc.Close)
	// Tiered storage as the broker has it: ledgers offloaded by a namespace's own driver or
	// bucket are read where their offload context says (brokerd.StartOffloadPool).
	pool, off, err := brokerd.StartOffloadPool(ctx, cfg.Offload, log, reg)
	if err != nil {
		return nil, err
	}
	if off != nil {
		closers = append(closers, off.Close)
	}
	closers = append(closers, pool.Close)
	f, err := managedledger.NewFactory(managedledger.FactoryOptions{
		Ledger: lc, Store: store, Config: cfg.ManagedLedger, Logger: log, Offloader: off,
		OffloadDefaults: offload.PoliciesFromConfig(cfg.Offload).Trigger(),
		OffloadPool:     pool, OffloadPolicies: offload.PoliciesFromConfig(cfg.Offload),
	})
	if err != nil {
		return nil, fmt.Errorf("managed ledgers: %w", err)
	}
	closers = append(closers, func() error { return f.Close(context.Background()) })
	res := resources.New(store)
	authn, err := auth.NewService(cfg.Security.Authn, auth.ServiceOptions{Logger: log})
	if err != nil {
		return nil, err
	}
	authz, err := auth.NewAuthorizer(cfg.Security.Authz, auth.CachedPolicies(resources.PermissionSource{R: res}, policyCacheTTL, policyCacheEntries), log)
	if err != nil {
		return nil, err
	}
	// The broker's TLS keys (tlsCertificateFilePath, tlsKeyFilePath, tlsTrustCertsFilePath),
	// reloaded every tlsCertRefreshCheckDurationSec as the broker reloads them.
	var stls *auth.ServerTLS
	if cfg.Security.TLS.Configured() {
		if stls, err = auth.NewServerTLS(cfg.Security.TLS, log); err != nil {
			return nil, fmt.Errorf("sql TLS: %w", err)
		}
	}
	w, err := Start(Options{
		Config: cfg.SQL, BindAddress: cfg.BindAddress, Store: store, Resources: res,
		Schemas: schema.New(store, cfg.Schema, log), Logs: f, Auth: authn, Authz: authz, TLS: stls, Logger: log, Registerer: reg,
	})
	if err != nil {
		return nil, err
	}
	w.close = func() error {
		var errs []error
		for i := len(closers) - 1; i >= 0; i-- {
			errs = append(errs, closers[i]())
		}
		return errors.Join(errs...)
	}
	return w, nil
}

// Permissions are read through a cache as the broker reads them (brokerd/services.go): a
// grant or revocation takes effect within policyCacheTTL.
const (
	policyCacheTTL     = 2 * time.Second
	policyCacheEntries = 10000
)
