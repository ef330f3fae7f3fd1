package bookie

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/magnetar-io/magnetar/internal/bookie/storage"
	"github.com/magnetar-io/magnetar/internal/bookieproto"
	"github.com/magnetar-io/magnetar/internal/config"
	"github.com/magnetar-io/magnetar/internal/metadata"
	"github.com/magnetar-io/magnetar/internal/resources"
)

// Options are what Start takes besides the config. Zero values mean "build it from the config".
type Options struct {
	// Logger is the process logger; components derive theirs from it.
	Logger *slog.Logger
	// Registerer receives the server's and the storage's metrics; nil: not exported.
	Registerer prometheus.Registerer
	// Storage, when set, is used instead of opening cfg.Storage; Start's caller then owns it
	// (Close does not close it). standalone and tests pass one.
	Storage storage.Storage
	// Metadata, when set, is the store to register in instead of dialling
	// cfg.MetadataStoreURL; Close does not close it.
	Metadata metadata.Store
	// Listener, when set, is served instead of listening on cfg.ListenAddress.
	Listener net.Listener
	// OpenStorage opens cfg.Storage when Storage is nil (storage.Open in production).
	OpenStorage func(cfg config.BookieStorageConfig, logger *slog.Logger, reg prometheus.Registerer) (storage.Storage, error)
	// OpenMetadata dials cfg.MetadataStoreURL when Metadata is nil and the URL is set.
	OpenMetadata func(ctx context.Context, url string, logger *slog.Logger) (metadata.Store, error)
}

// Bookie is a running bookie: storage, protocol server and registration. standalone embeds
// one; `magnetar bookie` runs one per process.
type Bookie struct {
	cfg    config.BookieConfig
	log    *slog.Logger
	st     storage.Storage
	ownSt  bool
	md     metadata.Store
	ownMd  bool
	srv    *Server
	ln     net.Listener
	addr   string // advertised
	reg    *registrar
	cancel context.CancelFunc
	wg     sync.WaitGroup // the Serve goroutine
	regWG  sync.WaitGroup // the registrar
	once   sync.Once
}

// Start opens the storage (unless given), listens, serves, and registers in the metadata
// store when one is configured. It returns once the bookie accepts connections.
func Start(ctx context.Context, cfg config.BookieConfig, opts Options) (*Bookie, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	logger := opts.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	b := &Bookie{cfg: cfg, log: logger.With("component", "bookie"), st: opts.Storage, md: opts.Metadata}
	fail := func(err error) (*Bookie, error) {
		if b.ln != nil && opts.Listener == nil {
			_ = b.ln.Close()
		}
		_ = b.closeResources()
		return nil, err
	}
	if b.st == nil {
		if opts.OpenStorage == nil {
			return fail(errors.New("bookie: no storage given and no way to open one"))
		}
		st, err := opts.OpenStorage(cfg.Storage, logger, opts.Registerer)
		if err != nil {
			return fail(fmt.Errorf("bookie: opening storage: %w", err))
		}
		b.st, b.ownSt = st, true
	}
	srv, err := NewServer(cfg, b.st, logger, opts.Registerer)
	if err != nil {
		return fail(err)
	}
	b.srv = srv
	b.ln = opts.Listener
	if b.ln == nil {
		if b.ln, err = net.Listen("tcp", cfg.ListenAddress); err != nil {
			return fail(fmt.Errorf("bookie: listen on %s (bookieAddress): %w", cfg.ListenAddress, err))
		}
	}
	if b.addr, err = advertised(cfg.AdvertisedAddress, b.ln.Addr().String()); err != nil {
		return fail(err)
	}
	if b.md == nil && cfg.MetadataStoreURL != "" {
		if opts.OpenMetadata == nil {
			return fail(errors.New("bookie: metadataStoreUrl set but no way to open a metadata store"))
		}
		md, err := opts.OpenMetadata(ctx, cfg.MetadataStoreURL, logger)
		if err != nil {
			return fail(fmt.Errorf("bookie: metadata store %s: %w", cfg.MetadataStoreURL, err))
		}
		b.md, b.ownMd = md, true
	}
	verifyLater, err := b.checkCookie(ctx)
	if err != nil {
		return fail(err)
	}
	runCtx, cancel := context.WithCancel(context.Background())
	b.cancel = cancel
	b.wg.Add(1)
	go func() {
		defer b.wg.Done()
		if err := srv.Serve(b.ln); err != nil && !errors.Is(err, ErrServerClosed) {
			b.log.Error("bookie stopped accepting connections", "err", err)
		}
	}()
	if b.md != nil {
		b.reg = &registrar{
			store: b.md, readOnly: b.st.ReadOnly, poll: 500 * time.Millisecond,
			opts: metadata.RegistrationOptions{
				TTL:           time.Duration(cfg.MetadataSessionTimeoutMillis) * time.Millisecond,
				RetryInterval: 100 * time.Millisecond, MaxRetryInterval: 5 * time.Second,
			},
			reg:     resources.BookieRegistration{Address: b.addr, Rack: cfg.Rack, InstanceID: b.instanceID()},
			verify:  verifyLater,
			log:     logger.With("component", "bookie-registration"),
			metrics: srv.metrics,
		}
		b.regWG.Add(1)
		go func() {
			defer b.regWG.Done()
			b.reg.run(runCtx)
		}()
	}
	b.log.Info("bookie serving", "address", b.ln.Addr().String(), "advertised", b.addr, "registered", b.md != nil)
	return b, nil
}

// cookieCheckTimeout bounds the first attempt to check the cluster-wide cookie of a bookie
// whose storage existed before (its local cookies already vouch for it).
const cookieCheckTimeout = 5 * time.Second

// checkCookie compares the storage instance with the cluster-wide cookie of the advertised
// address (cookie.go). A new, empty instance must pass before it serves anything, so Start
// waits for the store (until ctx ends); an existing one is checked once here and, if the
// store does not answer, again by the registrar before it registers (the returned func).
func (b *Bookie) checkCookie(ctx context.Context) (func(context.Context) error, error) {
	id, ok := b.st.(storage.Identity)
	if b.md == nil || !ok {
		return nil, nil
	}
	verify := func(ctx context.Context) error {
		return verifyCookie(ctx, b.md, b.addr, id, b.cfg.Storage.JournalDir(), b.cfg.Storage.LedgerDir())
	}
	if id.NewInstance() {
		backoff := 100 * time.Millisecond
		for {
			err := verify(ctx)
			if err == nil || errors.Is(err, ErrCookieMismatch) {
				return nil, err
			}
			b.log.Warn("new storage instance waits for the metadata store to check its cookie before serving", "err", err, "retryIn", backoff)
			select {
			case <-ctx.Done():
				return nil, fmt.Errorf("bookie: cookie of a new storage instance not checked: %w", context.Cause(ctx))
			case <-time.After(backoff):
			}
			backoff = min(2*backoff, 5*time.Second)
		}
	}
	cctx, cancel := context.WithTimeout(ctx, cookieCheckTimeout)
	err := verify(cctx)
	cancel()
	switch {
	case err == nil:
		return nil, nil
	case errors.Is(err, ErrCookieMismatch):
		return nil, err
	}
	b.log.Warn("cluster-wide cookie not checked yet (metadata store not answering); the registrar checks it before registering", "err", err)
	return verify, nil
}

func (b *Bookie) instanceID() string {
	if id, ok := b.st.(storage.Identity); ok {
		return id.InstanceID()
	}
	return ""
}

// advertised picks the address registered for clients: the configured one, else the bound
// listen address, with the host name in place of a wildcard host.
func advertised(configured, bound string) (string, error) {
	if configured != "" {
		return configured, nil
	}
	host, port, err := net.SplitHostPort(bound)
	if err != nil {
		return "", fmt.Errorf("bookie: listen address %q: %w", bound, err)
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsUnspecified() {
		if host, err = os.Hostname(); err != nil {
			return "", fmt.Errorf("bookie: listening on a wildcard address and no host name for advertisedAddress: %w", err)
		}
	}
	return net.JoinHostPort(host, port), nil
}

// Addr is the address the bookie listens on (with the real port when configured with :0).
func (b *Bookie) Addr() string { return b.ln.Addr().String() }

// Ready reports whether the bookie serves and is registered in the metadata store, so ledger
// clients can place ledgers on it (BookKeeper's /api/v1/bookie/is_ready). A bookie without a
// metadata store is ready once it serves.
func (b *Bookie) Ready() bool { return b.reg == nil || b.reg.registered() }

// AdvertisedAddr is the address registered for clients.
func (b *Bookie) AdvertisedAddr() string { return b.addr }

// Local is the bookie as an in-process handler for a bookie client in the same process
// (bookieproto.ClientOptions.Local, keyed by AdvertisedAddr).
func (b *Bookie) Local() bookieproto.Handler { return b.srv.Local() }

// Storage is the bookie's storage.
func (b *Bookie) Storage() storage.Storage { return b.st }

// Close shuts the bookie down cleanly: deregister (clients stop picking it), stop reading
// requests, answer the ones in flight (bounded by shutdownTimeout), close connections, then
// close what Start opened.
func (b *Bookie) Close() error {
	var err error
	b.once.Do(func() {
		// Deregister first and wait for it (the registrar closes its session, so the key goes
		// away now): clients stop picking this bookie before its connections drain.
		b.cancel()
		b.regWG.Wait()
		_ = b.srv.Shutdown(context.Background())
		b.wg.Wait()
		err = b.closeResources()
		b.log.Info("bookie stopped")
	})
	return err
}

func (b *Bookie) closeResources() error {
	var errs []error
	if b.ownMd && b.md != nil {
		errs = append(errs, b.md.Close())
	}
	if b.ownSt && b.st != nil {
		if err := b.st.Close(); err != nil && !errors.Is(err, storage.ErrClosed) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
