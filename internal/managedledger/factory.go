package managedledger

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/magnetar-io/magnetar/internal/clock"
	"github.com/magnetar-io/magnetar/internal/config"
	"github.com/magnetar-io/magnetar/internal/ledger"
	"github.com/magnetar-io/magnetar/internal/metadata"
	"github.com/magnetar-io/magnetar/internal/offload"
	"github.com/magnetar-io/magnetar/internal/resources"
)

// DefaultMetadataRoot is where managed ledgers keep their ledger lists and cursor snapshots.
const DefaultMetadataRoot = resources.ManagedLedgersRoot

// FactoryOptions wires a Factory to its dependencies.
type FactoryOptions struct {
	Ledger ledger.Client
	Store  metadata.Store
	Config config.ManagedLedgerConfig
	Logger *slog.Logger
	// Clock is the broker's clock for retention, TTL, rollover age and cache age, shared
	// through Factory.Clock with the transaction coordinators and the topic service (tests
	// inject a clock.Fake, the chaos harness a clock.Offset). nil: Now, else the system clock.
	Clock clock.Clock
	// Now reads the time when Clock is nil (tests that need no timers); nil: the system clock.
	Now func() time.Time
	// MetadataRoot overrides DefaultMetadataRoot.
	MetadataRoot string
	// Registerer receives the factory's metrics (pulsar_ml_*); nil: not exported.
	Registerer prometheus.Registerer
	// Offloader is the tiered storage of managed ledgers whose Config names none; nil: no
	// offload (ledgers already offloaded elsewhere cannot be read).
	Offloader offload.Offloader
	// OffloadDefaults are the broker's offload thresholds, deletion lag and read priority,
	// the Config.Offload of DefaultConfig; zero: Pulsar's defaults.
	OffloadDefaults offload.Trigger
	// OffloadPool, when set, gives every managed ledger the offloader of its effective
	// policy: Config.OffloadPolicies over OffloadPolicies (the broker's keys), one offloader
	// per distinct driver configuration. Nil: every managed ledger uses Offloader.
	OffloadPool     *offload.Pool
	OffloadPolicies offload.Policies
	// DisableBackground turns off the periodic retention/rollover/cache-age pass; tests that
	// drive it by hand (CheckRollover, Trim, EvictCache) set it.
	DisableBackground bool
}

// Lock order: Factory.mu before ManagedLedger.mu (Open checks an instance's state); nothing
// takes Factory.mu while holding ManagedLedger.mu.
//
// Factory opens managed ledgers of one broker and owns what they share: the entry cache and
// the background pass that enforces rollover age, retention and cache age.
type Factory struct {
	lc    ledger.Client
	store metadata.Store
	cfg   config.ManagedLedgerConfig
	log   *slog.Logger
	clock clock.Clock
	now   func() time.Time // clock.Now
	root  string
	cache *entryCache

	mu      sync.Mutex
	ledgers map[string]*ManagedLedger
	opening map[string]chan struct{} // closed when an Open in progress ends
	closed  bool

	stop chan struct{}
	wg   sync.WaitGroup

	offloader       offload.Offloader
	offloadDefaults offload.Trigger
	offloadPool     *offload.Pool
	offloadBase     offload.Policies
	offloadDeletes  offloadDeleteQueue // refused object deletes, retried (ml_offload.go)

	// parseMeta fills in Entry.Meta for entries read from ledgers (SetMetaParser).
	parseMeta atomic.Pointer[func([]byte) EntryMeta]
}

// SetMetaParser sets what reads from ledgers use to fill in Entry.Meta: the topic layer's
// parser of its entries' metadata. Entries added with AddEntryMeta keep the meta they were
// added with. Set it before the first read; nil leaves Meta zero for ledger reads.
func (f *Factory) SetMetaParser(parse func(data []byte) EntryMeta) {
	if parse == nil {
		f.parseMeta.Store(nil)
		return
	}
	f.parseMeta.Store(&parse)
}

func (f *Factory) metaParser() func([]byte) EntryMeta {
	if p := f.parseMeta.Load(); p != nil {
		return *p
	}
	return nil
}

// Clock is the factory's clock (FactoryOptions.Clock): what everything built on these
// managed ledgers reads the time from, so one injected clock moves them all.
func (f *Factory) Clock() clock.Clock { return f.clock }

// nowClock is FactoryOptions.Now as a Clock: its readings are now's, its timers real.
type nowClock struct{ now func() time.Time }

func (c nowClock) Now() time.Time { return c.now() }
func (c nowClock) AfterFunc(d time.Duration, fn func()) clock.Timer {
	return clock.Real.AfterFunc(d, fn)
}

// NewFactory validates the options and starts the background pass.
func NewFactory(opts FactoryOptions) (*Factory, error) {
	if opts.Ledger == nil || opts.Store == nil {
		return nil, fmt.Errorf("%w: factory needs a ledger client and a metadata store", ErrBadConfig)
	}
	if err := opts.Config.Validate(); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadConfig, err)
	}
	f := &Factory{
		lc:      opts.Ledger,
		store:   opts.Store,
		cfg:     opts.Config,
		log:     opts.Logger,
		root:    opts.MetadataRoot,
		ledgers: map[string]*ManagedLedger{},
		opening: map[string]chan struct{}{},
		stop:    make(chan struct{}),

		offloader:       opts.Offloader,
		offloadDefaults: opts.OffloadDefaults,
		offloadPool:     opts.OffloadPool,
		offloadBase:     opts.OffloadPolicies,
	}
	if f.offloadDefaults == (offload.Trigger{}) {
		f.offloadDefaults = offload.Policies{}.Trigger()
	}
	if f.log == nil {
		f.log = slog.New(slog.DiscardHandler)
	}
	f.log = f.log.With("component", "managedledger")
	switch {
	case opts.Clock != nil:
		f.clock = opts.Clock
	case opts.Now != nil:
		f.clock = nowClock{now: opts.Now}
	default:
		f.clock = clock.Real
	}
	f.now = f.clock.Now
	if f.root == "" {
		f.root = DefaultMetadataRoot
	}
	f.cache = newEntryCache(f.cfg.CacheSizeMB<<20, f.cfg.CacheEvictionWatermark,
		time.Duration(f.cfg.CacheEvictionTimeThresholdMillis)*time.Millisecond, f.now)
	if opts.Registerer != nil {
		if err := opts.Registerer.Register(newFactoryCollector(f)); err != nil {
			return nil, fmt.Errorf("managedledger: registering metrics: %w", err)
		}
	}
	if !opts.DisableBackground {
		f.wg.Add(1)
		go f.background()
	}
	return f, nil
}

// DefaultConfig returns the per-topic config built from the broker defaults.
func (f *Factory) DefaultConfig() Config {
	c := ConfigFrom(f.cfg)
	c.Offload = f.offloadDefaults
	return c
}

func (f *Factory) mlKey(name string) string { return f.root + "/" + url.PathEscape(name) }

func (f *Factory) cursorKey(name, cursor string) string {
	return f.mlKey(name) + "/" + url.PathEscape(cursor)
}

// Open returns the managed ledger called name, opening it (and recovering the previous
// owner's state) if this factory does not have it open yet. Opening fences the previous
// owner's last ledger, so an old owner still running can no longer append. Concurrent Opens
// of one name share the work. cfg applies only when the ledger is opened here.
func (f *Factory) Open(ctx context.Context, name string, cfg Config) (*ManagedLedger, error) {
	if name == "" {
		return nil, fmt.Errorf("%w: empty managed ledger name", ErrBadConfig)
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	for {
		f.mu.Lock()
		if f.closed {
			f.mu.Unlock()
			return nil, ErrClosed
		}
		if ml, ok := f.ledgers[name]; ok {
			if ml.usable() {
				f.mu.Unlock()
				return ml, nil
			}
			// Fenced or closing: a fresh instance recovers from the newer owner's state.
			delete(f.ledgers, name)
		}
		wait, busy := f.opening[name]
		if !busy {
			done := make(chan struct{})
			f.opening[name] = done
			f.mu.Unlock()
			ml, err := openManagedLedger(ctx, f, name, cfg)
			f.mu.Lock()
			delete(f.opening, name)
			if err == nil {
				if f.closed {
					f.mu.Unlock()
					_ = ml.Close(ctx)
					close(done)
					return nil, ErrClosed
				}
				f.ledgers[name] = ml
			}
			f.mu.Unlock()
			close(done)
			return ml, err
		}
		f.mu.Unlock()
		select {
		case <-wait:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// Get returns the managed ledger if this factory has it open.
func (f *Factory) Get(name string) (*ManagedLedger, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	ml, ok := f.ledgers[name]
	return ml, ok
}

// List returns the names of every managed ledger stored under the metadata root, open here or
// not.
func (f *Factory) List(ctx context.Context) ([]string, error) {
	kvs, err := f.store.List(ctx, f.root+"/")
	if err != nil {
		return nil, fmt.Errorf("managedledger: listing: %w", err)
	}
	var names []string
	for _, kv := range kvs {
		rest := kv.Key[len(f.root)+1:]
		if containsSlash(rest) {
			continue // a cursor key
		}
		if n, err := url.PathUnescape(rest); err == nil {
			names = append(names, n)
		}
	}
	return names, nil
}

func containsSlash(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] == '/' {
			return true
		}
	}
	return false
}

// Delete deletes a managed ledger with its ledgers and cursors, opening it first if needed.
func (f *Factory) Delete(ctx context.Context, name string) error {
	if _, err := f.store.Get(ctx, f.mlKey(name)); errors.Is(err, metadata.ErrNotFound) {
		return fmt.Errorf("%w: %s", ErrNotFound, name)
	}
	ml, err := f.Open(ctx, name, f.DefaultConfig())
	if err != nil {
		return err
	}
	return ml.Delete(ctx)
}

func (f *Factory) forget(ml *ManagedLedger) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.ledgers[ml.name] == ml {
		delete(f.ledgers, ml.name)
	}
}

// CacheStats reports the shared entry cache.
func (f *Factory) CacheStats() CacheStats { return f.cache.stats() }

// EvictCache runs one age-eviction pass of the entry cache now.
func (f *Factory) EvictCache() { f.cache.evictByAge() }

// RunMaintenance runs one pass of what the background loop does for every open managed
// ledger: age-based rollover, retention trimming, cache age eviction and the backlogged
// check of active cursors.
func (f *Factory) RunMaintenance(ctx context.Context) {
	f.cache.evictByAge()
	f.checkBackloggedCursors()
	for _, ml := range f.openLedgers() {
		ml.CheckRollover()
		if err := ml.Retention().Trim(ctx); err != nil && !errors.Is(err, ErrClosed) && !errors.Is(err, ErrFenced) {
			ml.log.Warn("retention trim failed; retrying at the next check", "err", err)
		}
		ml.offloadMaintenance(ctx)
	}
	f.retryOffloadDeletes(ctx)
}

func (f *Factory) openLedgers() []*ManagedLedger {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make([]*ManagedLedger, 0, len(f.ledgers))
	for _, ml := range f.ledgers {
		out = append(out, ml)
	}
	return out
}

func (f *Factory) background() {
	defer f.wg.Done()
	cacheEvery := time.Duration(float64(time.Second) / f.cfg.CacheEvictionFrequency)
	cacheTick := time.NewTicker(cacheEvery)
	defer cacheTick.Stop()
	mlTick := time.NewTicker(time.Duration(f.cfg.RetentionCheckIntervalInSeconds) * time.Second)
	defer mlTick.Stop()
	backlogTick := time.NewTicker(backloggedCheckInterval)
	defer backlogTick.Stop()
	for {
		select {
		case <-f.stop:
			return
		case <-cacheTick.C:
			f.cache.evictByAge()
		case <-backlogTick.C:
			f.checkBackloggedCursors()
		case <-mlTick.C:
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			f.RunMaintenance(ctx)
			cancel()
		}
	}
}

// Close closes every open managed ledger (flushing cursor state) and stops the background
// pass. It does not close the ledger client or the metadata store.
func (f *Factory) Close(ctx context.Context) error {
	f.mu.Lock()
	if f.closed {
		f.mu.Unlock()
		return nil
	}
	f.closed = true
	f.mu.Unlock()
	close(f.stop)
	f.wg.Wait()
	var errs []error
	for _, ml := range f.openLedgers() {
		if err := ml.Close(ctx); err != nil && !errors.Is(err, ErrFenced) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
