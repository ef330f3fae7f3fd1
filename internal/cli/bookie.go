package cli

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"path/filepath"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/magnetar-io/magnetar/internal/auth"
	"github.com/magnetar-io/magnetar/internal/bookie"
	"github.com/magnetar-io/magnetar/internal/bookie/storage"
	"github.com/magnetar-io/magnetar/internal/bookie/storage/vfs"
	"github.com/magnetar-io/magnetar/internal/bookieproto"
	"github.com/magnetar-io/magnetar/internal/config"
	"github.com/magnetar-io/magnetar/internal/ledger"
	"github.com/magnetar-io/magnetar/internal/metadata"
	"github.com/magnetar-io/magnetar/internal/metadata/connect"
)

// bookieFlagAliases are the short flag names of docs/ARCHITECTURE.md §2 for keys whose derived
// flag is long (journalDirectories -> --journal-directories).
var bookieFlagAliases = map[string]string{
	"journal-dir": "journal-directories",
	"ledger-dir":  "ledger-directories",
}

// bookieCmd is `magnetar bookie`: one storage node serving the bookie protocol until SIGINT
// or SIGTERM, then shutting down cleanly (deregister, answer in-flight adds, close storage).
func (a *app) bookieCmd() *cobra.Command {
	cfg := config.DefaultBookieConfig()
	cmd := &cobra.Command{
		Use:   "bookie",
		Short: "Run a bookie: the storage node that keeps ledgers (journal, entry logs, index)",
		Args:  cobra.NoArgs,
	}
	b := bindFlags(cmd.Flags(), &cfg)
	aliasFlags(cmd, bookieFlagAliases)
	cmd.AddCommand(deleteCookieCmd())
	// Test only (the chaos harness): disk faults through the storage's fault file layer,
	// switched by the contents of this file (vfs.ControlFaults). Hidden from --help.
	var faultControl string
	cmd.Flags().StringVar(&faultControl, "test-fault-control", "", "test only: file naming disk faults to inject (full, syncfail); relative to the journal directory's parent")
	_ = cmd.Flags().MarkHidden("test-fault-control")
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		logger, err := a.load(b, cfg.Validate)
		if err != nil {
			return err
		}
		ctx := cmd.Context()
		setMemoryLimit(ctx, cfg.Storage, a.env.Environ, logger)
		reg := prometheus.NewRegistry()
		reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
		// Metrics first: the endpoint answers (with what is registered so far) by the time
		// the bookie logs that it serves.
		var live atomic.Pointer[bookie.Bookie]
		ready := func() bool { b := live.Load(); return b != nil && b.Ready() }
		stopMetrics, err := serveMetrics(cfg.MetricsAddress, reg, ready, logger)
		if err != nil {
			return err
		}
		bk, err := bookie.Start(ctx, cfg, bookie.Options{
			Logger: logger, Registerer: reg, OpenStorage: faultStorage(ctx, faultControl, logger), OpenMetadata: metadataOpener(cfg.MetadataTLS),
		})
		if err != nil {
			stopMetrics()
			return err
		}
		live.Store(bk)
		stopAuditor, err := startAuditor(ctx, cfg, bk.AdvertisedAddr(), reg, logger)
		if err != nil {
			stopMetrics()
			cerr := bk.Close()
			if ctx.Err() != nil {
				// A signal while the auditor was starting (its metadata reads saw the
				// context end): stopping is what was asked, not a failure.
				logger.Info("shutting down", "cause", context.Cause(ctx))
				return cerr
			}
			return err
		}
		<-ctx.Done()
		logger.Info("shutting down", "cause", context.Cause(ctx))
		return stopWithin(logger, "bookieShutdownTimeoutMs", cfg.ProcessShutdownTimeoutMs, func(context.Context) error {
			stopAuditor()
			stopMetrics()
			return bk.Close()
		})
	}
	return cmd
}

// deleteCookieCmd is `magnetar bookie delete-cookie`: it removes a bookie address's
// cluster-wide cookie (BookKeeper's cookie delete), so a new storage instance (a replaced
// disk) may join at that address. Run it only after the address was decommissioned and its
// ledgers re-replicated: until then ledgers name the address for data the new disk lacks.
func deleteCookieCmd() *cobra.Command {
	var url, addr string
	cmd := &cobra.Command{
		Use:   "delete-cookie",
		Short: "Forget a bookie address's storage identity so a replaced disk may join there",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if url == "" || addr == "" {
				return usageError(errors.New("--metadata-url and --address are required"))
			}
			ctx, cancel := context.WithTimeout(cmd.Context(), 30*time.Second)
			defer cancel()
			store, err := openMetadataStore(ctx, url, slog.New(slog.DiscardHandler))
			if err != nil {
				return err
			}
			defer store.Close()
			return bookie.DeleteCookie(ctx, store, addr)
		},
	}
	cmd.Flags().StringVar(&url, "metadata-url", "", "metadata store URL (etcd://host:port,...)")
	cmd.Flags().StringVar(&addr, "address", "", "the bookie's advertised address (host:port)")
	return cmd
}

// startAuditor runs the auto-recovery auditor candidate of this bookie when enabled and a
// metadata store is configured; the returned stop ends it. Only the elected candidate works.
func startAuditor(ctx context.Context, cfg config.BookieConfig, name string, reg prometheus.Registerer, logger *slog.Logger) (func(), error) {
	if !cfg.AutoRecoveryDaemonEnabled || cfg.MetadataStoreURL == "" {
		return func() {}, nil
	}
	store, err := metadataOpener(cfg.MetadataTLS)(ctx, cfg.MetadataStoreURL, logger)
	if err != nil {
		return nil, err
	}
	bkTLS, err := auth.BookieClientTLS(cfg.Ledger.TLS, logger)
	if err != nil {
		_ = store.Close()
		return nil, err
	}
	bookies := bookieproto.NewClient(bookieproto.ClientOptions{Logger: logger, MaxFrameSize: cfg.MaxFrameSizeBytes, TLS: bkTLS})
	aud, err := ledger.NewAuditor(ctx, ledger.AuditorOptions{
		Config: cfg.Ledger, Store: store, Bookies: bookies, Logger: logger, Registerer: reg, Name: name,
	})
	if err != nil {
		_ = bookies.Close()
		_ = store.Close()
		return nil, err
	}
	runCtx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := aud.Run(runCtx); err != nil && runCtx.Err() == nil {
			logger.Error("auditor stopped", "err", err)
		}
	}()
	return func() {
		cancel()
		<-done
		_ = aud.Close()
		_ = bookies.Close()
		_ = store.Close()
	}, nil
}

// memoryHeadroom is what the bookie may use beyond its configured caches: buffers of
// connections, Pebble's memtables and block cache, and the garbage collector's slack.
const memoryHeadroom = 64 << 20

// setMemoryLimit gives the Go runtime a soft memory limit of the configured caches plus
// headroom, so the garbage collector works harder instead of letting the heap double past
// the caches (GOGC=100 alone would). GOMEMLIMIT in the environment wins.
func setMemoryLimit(ctx context.Context, cfg config.BookieStorageConfig, environ []string, logger *slog.Logger) {
	limit := (cfg.WriteCacheMaxSizeMB+cfg.ReadAheadCacheMaxSizeMB)<<20 + cfg.JournalQueueSizeBytes + memoryHeadroom - codeReserve
	applyMemoryLimit(ctx, limit, environ, logger)
}

// serveMetrics serves reg at http://addr/metrics, and BookKeeper's health endpoints beside it
// (/heartbeat: the process answers; /api/v1/bookie/is_ready: 200 once ready() holds, 503
// before, for readiness probes), until the returned stop is called; an empty addr serves
// nothing.
func serveMetrics(addr string, reg *prometheus.Registry, ready func() bool, logger *slog.Logger) (func(), error) {
	if addr == "" {
		return func() {}, nil
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, usageError(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg}))
	mux.HandleFunc("/heartbeat", func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "OK\n") })
	mux.HandleFunc("/api/v1/bookie/is_ready", func(w http.ResponseWriter, _ *http.Request) {
		if !ready() {
			http.Error(w, "Bookie is not ready: not serving or not registered in the metadata store", http.StatusServiceUnavailable)
			return
		}
		_, _ = io.WriteString(w, "OK\n")
	})
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			logger.Error("metrics endpoint stopped", "err", err)
		}
	}()
	logger.Info("serving metrics", "address", ln.Addr().String(), "path", "/metrics")
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
	}, nil
}

// openBookieStorage opens the disk storage of a bookie.
func openBookieStorage(cfg config.BookieStorageConfig, logger *slog.Logger, reg prometheus.Registerer) (storage.Storage, error) {
	return storage.Open(cfg, logger, reg)
}

// faultStorage is openBookieStorage, or with a test fault control file the disk storage on
// a vfs.FaultFS that the file drives.
func faultStorage(ctx context.Context, control string, logger *slog.Logger) func(config.BookieStorageConfig, *slog.Logger, prometheus.Registerer) (storage.Storage, error) {
	if control == "" {
		return openBookieStorage
	}
	return func(cfg config.BookieStorageConfig, l *slog.Logger, reg prometheus.Registerer) (storage.Storage, error) {
		if !filepath.IsAbs(control) { // relative to the bookie's directory (journal's parent)
			control = filepath.Join(filepath.Dir(cfg.JournalDir()), control)
		}
		logger.Warn("TEST ONLY: bookie storage on the fault file layer", "control", control)
		ffs := vfs.NewFaultFS(vfs.Default())
		undo := filepath.Join(filepath.Dir(control), "undo")
		vfs.ApplyFaultFile(control, undo, ffs, logger) // before the storage's first write
		go vfs.ControlFaults(ctx, control, undo, ffs, logger)
		return storage.OpenWithFS(cfg, ffs, l, reg)
	}
}

// openMetadataStore dials the metadata store named by url, in plaintext.
func openMetadataStore(ctx context.Context, url string, logger *slog.Logger) (metadata.Store, error) {
	return connect.Open(ctx, url, logger)
}

// metadataOpener dials the metadata store over TLS when metadataStoreConfigPath says so.
func metadataOpener(tc config.MetadataClientTLSConfig) func(context.Context, string, *slog.Logger) (metadata.Store, error) {
	return func(ctx context.Context, url string, logger *slog.Logger) (metadata.Store, error) {
		t, err := auth.MetadataClientTLS(tc, logger)
		if err != nil {
			return nil, usageError(err)
		}
		return connect.OpenTLS(ctx, url, t, logger)
	}
}

// aliasFlags makes the short flag names in aliases (BookKeeper's and Pulsar's spellings)
// stand for the long ones.
func aliasFlags(cmd *cobra.Command, aliases map[string]string) {
	cmd.Flags().SetNormalizeFunc(func(_ *pflag.FlagSet, name string) pflag.NormalizedName {
		if long, ok := aliases[name]; ok {
			name = long
		}
		return pflag.NormalizedName(name)
	})
}
