package offload

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
)

// Pool shares offloaders among the topics whose effective offload policies resolve to the
// same driver configuration, as Pulsar keeps one LedgerOffloader per distinct
// OffloadPolicies: a namespace that names its own driver or bucket gets its own offloader,
// built on first use and closed when the last topic using it lets go. The pool is
// bounded (MaxOffloaders); past it Acquire fails with ErrTooManyOffloaders rather than
// opening clients without limit. Every offloader of a pool shares the pool's Options: one
// chunk cache, one set of metrics, one logger.
//
// Reads and deletes of a ledger go where the ledger was offloaded, not where its topic's
// policy points now: AcquireAt finds a live offloader of the recorded location (with its
// credentials), else opens one there with the caller's fallback configuration.
type Pool struct {
	opts  Options
	max   int
	build func(context.Context, Config, Options) (Offloader, error)

	mu      sync.Mutex
	entries map[Config]*poolEntry
	closed  bool
}

type poolEntry struct {
	cfg    Config
	loc    string // metadataKey of its location
	o      Offloader
	err    error
	ready  chan struct{} // closed once o or err is set
	refs   int
	pinned bool // the caller's offloader: never closed by the pool
}

// DefaultMaxOffloaders bounds a pool (managedLedgerOffloadMaxOffloaders).
const DefaultMaxOffloaders = 16

// ErrTooManyOffloaders is Acquire past the pool's bound.
var ErrTooManyOffloaders = errors.New("offload: too many distinct offload configurations in use")

// NewPool returns an empty pool; maxOffloaders <= 0 means DefaultMaxOffloaders. A nil
// opts.Cache gets one cache of DefaultReadCacheSize shared by the pool's offloaders.
func NewPool(opts Options, maxOffloaders int) *Pool {
	if maxOffloaders <= 0 {
		maxOffloaders = DefaultMaxOffloaders
	}
	if opts.Cache == nil {
		opts.Cache = NewChunkCache(DefaultReadCacheSize)
	}
	return &Pool{opts: opts, max: maxOffloaders, build: New, entries: map[Config]*poolEntry{}}
}

// Options are what the pool's offloaders share (give them to an offloader to Pin).
func (p *Pool) Options() Options { return p.opts }

// poolKey is c without what the pool's offloaders share (the cache).
func poolKey(c Config) Config {
	c.ReadCacheSize = 0
	return c
}

// Pin adds an offloader the caller built and owns (the broker's, checked at startup) as the
// one for c. The pool never closes it; it does not count against the bound.
func (p *Pool) Pin(c Config, o Offloader) {
	p.mu.Lock()
	defer p.mu.Unlock()
	e := &poolEntry{cfg: c, loc: metadataKey(c.Driver, c.DriverMetadata()), o: o, ready: make(chan struct{}), pinned: true}
	close(e.ready)
	p.entries[poolKey(c)] = e
}

// Lease is one use of a pooled offloader; Release it when done.
type Lease struct {
	p    *Pool
	e    *poolEntry
	once sync.Once
}

// Offloader is the leased offloader, valid until Release.
func (l *Lease) Offloader() Offloader { return l.e.o }

// Release ends the use; the last release of an unpinned offloader closes it. Idempotent.
func (l *Lease) Release() { l.once.Do(func() { l.p.release(l.e) }) }

func (p *Pool) release(e *poolEntry) {
	p.mu.Lock()
	e.refs--
	var closing Offloader
	if e.refs <= 0 && !e.pinned {
		if p.entries[poolKey(e.cfg)] == e {
			delete(p.entries, poolKey(e.cfg))
		}
		closing = e.o
	}
	p.mu.Unlock()
	if closing != nil {
		if err := closing.Close(); err != nil {
			p.logger().Warn("closing an unused offloader failed", "driver", e.cfg.Driver, "location", e.cfg.DriverMetadata(), "err", err)
		}
	}
}

func (p *Pool) logger() *slog.Logger {
	if p.opts.Logger != nil {
		return p.opts.Logger
	}
	return slog.Default()
}

// Acquire returns the offloader of c, building it on first use (it connects lazily; no
// probe object is written). c must be valid.
func (p *Pool) Acquire(ctx context.Context, c Config) (*Lease, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	if !c.Enabled() {
		return nil, fmt.Errorf("%w: no managedLedgerOffloadDriver", ErrConfig)
	}
	key := poolKey(c)
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil, errClosed
	}
	if e := p.entries[key]; e != nil {
		e.refs++
		p.mu.Unlock()
		return p.await(ctx, e)
	}
	if n := p.unpinnedLocked(); n >= p.max {
		p.mu.Unlock()
		return nil, fmt.Errorf("%w: %d (managedLedgerOffloadMaxOffloaders); topics whose policies name yet another driver or bucket cannot offload until others stop",
			ErrTooManyOffloaders, n)
	}
	e := &poolEntry{cfg: c, loc: metadataKey(c.Driver, c.DriverMetadata()), ready: make(chan struct{}), refs: 1}
	p.entries[key] = e
	p.mu.Unlock()

	o, err := p.build(ctx, c, p.opts)
	p.mu.Lock()
	e.o, e.err = o, err
	if err != nil && p.entries[key] == e {
		delete(p.entries, key) // the next Acquire tries again
	}
	close(e.ready)
	p.mu.Unlock()
	if err != nil {
		p.release(e)
		return nil, err
	}
	return &Lease{p: p, e: e}, nil
}

// await waits for an entry another Acquire is building.
func (p *Pool) await(ctx context.Context, e *poolEntry) (*Lease, error) {
	select {
	case <-e.ready:
	case <-ctx.Done():
		p.release(e)
		return nil, ctx.Err()
	}
	if e.err != nil {
		p.release(e)
		return nil, e.err
	}
	return &Lease{p: p, e: e}, nil
}

func (p *Pool) unpinnedLocked() int {
	n := 0
	for _, e := range p.entries {
		if !e.pinned {
			n++
		}
	}
	return n
}

// AcquireAt returns an offloader that reads and deletes objects at a recorded location
// (an offloaded ledger's driver name and metadata): a live offloader of that location if
// there is one, else one opened there with the settings of the first usable fallback of
// the same driver (credentials of one driver mean nothing to another), else with the
// defaults (credentials from the environment). An empty driver means the first usable
// fallback's own location.
func (p *Pool) AcquireAt(ctx context.Context, driver string, md map[string]string, fallbacks ...Config) (*Lease, error) {
	fb, ok := pickFallback(driver, fallbacks)
	if driver == "" {
		if !ok {
			return nil, fmt.Errorf("%w: a ledger recorded without a driver and no offload driver configured", ErrConfig)
		}
		return p.Acquire(ctx, fb)
	}
	at := fb.WithDriverMetadata(driver, md)
	loc, want := metadataKey(driver, md), poolKey(at)
	p.mu.Lock()
	var best *poolEntry
	for _, e := range p.entries {
		select {
		case <-e.ready:
		default:
			continue // being built: another may serve, else Acquire below waits for it
		}
		if e.loc != loc || e.err != nil {
			continue
		}
		if best == nil || poolKey(e.cfg) == want {
			best = e
		}
	}
	if best != nil && !p.closed {
		best.refs++
		p.mu.Unlock()
		return &Lease{p: p, e: best}, nil
	}
	p.mu.Unlock()
	return p.Acquire(ctx, at)
}

// pickFallback is the first enabled, valid configuration of driver (any driver when
// driver is empty), else the defaults.
func pickFallback(driver string, fallbacks []Config) (Config, bool) {
	for _, c := range fallbacks {
		if c.Enabled() && c.Validate() == nil && (driver == "" || SameDriver(c.Driver, driver)) {
			return c, true
		}
	}
	return DefaultConfig(), false
}

// SameDriver tells whether two managedLedgerOffloadDriver values name one driver ("S3"
// and "aws-s3" do; case does not matter).
func SameDriver(a, b string) bool {
	a, b = canonicalDriver(a), canonicalDriver(b)
	s3 := func(d string) bool { return d == DriverS3 || d == DriverAWSS3 }
	return a == b || s3(a) && s3(b)
}

// Len is the number of offloaders in the pool, pinned ones included.
func (p *Pool) Len() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.entries)
}

// Close closes every offloader the pool built (pinned ones stay the caller's); leases
// still held then fail their calls.
func (p *Pool) Close() error {
	p.mu.Lock()
	p.closed = true
	var closing []Offloader
	for k, e := range p.entries {
		select {
		case <-e.ready:
		default:
			continue // its Acquire sees closed on release
		}
		if !e.pinned && e.o != nil {
			closing = append(closing, e.o)
		}
		delete(p.entries, k)
	}
	p.mu.Unlock()
	var errs []error
	for _, o := range closing {
		errs = append(errs, o.Close())
	}
	return errors.Join(errs...)
}
