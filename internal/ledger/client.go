package ledger

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/magnetar-io/magnetar/internal/bookieproto"
	"github.com/magnetar-io/magnetar/internal/config"
	"github.com/magnetar-io/magnetar/internal/metadata"
)

// ClientOptions are what NewClient needs. Store and Bookies are not closed by Client.Close.
type ClientOptions struct {
	Config  config.LedgerClientConfig
	Store   metadata.Store
	Bookies bookieproto.Client
	Logger  *slog.Logger // nil discards
	// Registerer receives the client's metrics (bookkeeper_client_*); nil: not exported.
	// Clients sharing a registerer share the metrics.
	Registerer prometheus.Registerer
}

// client implements Client over a metadata store and a bookie client.
type client struct {
	cfg     config.LedgerClientConfig
	store   metadata.Store
	bk      bookieproto.Client
	logger  *slog.Logger
	bookies *bookieSet
	metrics *clientMetrics
	reads   *readOrder

	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// NewClient validates the configuration, lists the registered bookies and starts watching
// them.
func NewClient(ctx context.Context, opts ClientOptions) (Client, error) {
	return newClient(ctx, opts)
}

func newClient(ctx context.Context, opts ClientOptions) (*client, error) {
	if err := opts.Config.Validate(); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadArgument, err)
	}
	if opts.Store == nil || opts.Bookies == nil {
		return nil, fmt.Errorf("%w: a metadata store and a bookie client are required", ErrBadArgument)
	}
	logger := opts.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	logger = logger.With("component", "ledger")
	metrics, err := newClientMetrics(opts.Registerer)
	if err != nil {
		return nil, err
	}
	c := &client{cfg: opts.Config, store: opts.Store, bk: opts.Bookies, logger: logger, metrics: metrics}
	c.bookies = newBookieSet(opts.Store, logger)
	if err := c.bookies.load(ctx); err != nil {
		return nil, err
	}
	runCtx, cancel := context.WithCancel(context.Background())
	c.cancel = cancel
	// Probe a bookie out of the read order about once a second: often enough to bring a
	// resumed bookie back soon, rarely enough that a dead one costs nothing.
	c.reads = newReadOrder(runCtx, min(c.cfg.ReadEntryTimeout, time.Second), c.cfg.ReadEntryTimeout, logger)
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		c.bookies.run(runCtx)
	}()
	return c, nil
}

func (c *client) placement() *placement {
	return &placement{policy: c.cfg.EnsemblePlacementPolicy, bookies: c.bookies.snapshot()}
}

func (c *client) Close() error {
	c.cancel()
	c.wg.Wait()
	return nil
}

func (c *client) Create(ctx context.Context, opts CreateOptions) (Writer, error) {
	e, qw, qa := opts.EnsembleSize, opts.WriteQuorum, opts.AckQuorum
	if !(e >= qw && qw >= qa && qa >= 1) || e > maxEnsembleSize {
		return nil, fmt.Errorf("%w: ensemble %d, write quorum %d, ack quorum %d (need %d >= E >= Qw >= Qa >= 1)",
			ErrBadArgument, e, qw, qa, maxEnsembleSize)
	}
	digest, err := digestName(opts.Digest)
	if err != nil {
		return nil, err
	}
	ensemble, err := c.waitPlacement(ctx, func(p *placement) ([]string, error) { return p.newEnsemble(e, qw, nil) })
	if err != nil {
		return nil, err
	}
	m := &ledgerMetadata{
		FormatVersion: metadataFormat, EnsembleSize: e, WriteQuorum: qw, AckQuorum: qa,
		Digest: digest, MasterKey: masterKey(opts.Password), State: stateOpen, LastEntryID: -1,
		Fragments: []fragment{{FirstEntry: 0, Ensemble: ensemble}}, CustomMetadata: opts.CustomMetadata,
		CTimeMillis: time.Now().UnixMilli(),
	}
	b, err := encodeMetadata(m)
	if err != nil {
		return nil, err
	}
	for {
		id, err := allocateLedgerID(ctx, c.store)
		if err != nil {
			return nil, err
		}
		// NotExists guards against a counter that was reset under existing ledgers.
		v, err := c.store.Put(ctx, ledgerKey(id), b, metadata.NotExists)
		if errors.Is(err, metadata.ErrBadVersion) {
			c.logger.Warn("ledger id already taken; allocating another", "ledger", id)
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("ledger: create metadata: %w", err)
		}
		c.logger.Debug("ledger created", "ledger", id, "ensemble", ensemble, "write_quorum", qw, "ack_quorum", qa)
		return newWriter(c, id, m, v), nil
	}
}

// waitPlacement retries choose for a short while when too few bookies are registered yet
// (a cluster starting up), then gives up with ErrNotEnoughBookies.
func (c *client) waitPlacement(ctx context.Context, choose func(*placement) ([]string, error)) ([]string, error) {
	deadline := time.Now().Add(c.cfg.AddEntryTimeout)
	for {
		ens, err := choose(c.placement())
		if err == nil || !errors.Is(err, ErrNotEnoughBookies) || time.Now().After(deadline) {
			return ens, err
		}
		c.bookies.mu.Lock()
		ch := c.bookies.changed
		c.bookies.mu.Unlock()
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("%w (%w)", err, ctx.Err())
		case <-ch:
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func (c *client) Open(ctx context.Context, id int64, opts OpenOptions) (Reader, error) {
	m, version, err := readMetadata(ctx, c.store, id)
	if err != nil {
		return nil, err
	}
	if subtle.ConstantTimeCompare(masterKey(opts.Password), m.MasterKey) != 1 {
		return nil, fmt.Errorf("%w: ledger %d", ErrUnauthorized, id)
	}
	if opts.Recovery && m.State != stateClosed {
		if m, err = c.recover(ctx, id, m, version); err != nil {
			c.metrics.recoveries.WithLabelValues("error").Inc()
			return nil, err
		}
		c.metrics.recoveries.WithLabelValues("ok").Inc()
	}
	return newReader(c, id, m), nil
}

// Delete removes the ledger's metadata, then asks every bookie that held a fragment to drop
// it. Metadata goes first so nobody opens a ledger whose entries are half gone; a bookie
// that cannot be reached keeps its copy until its own garbage collection finds no metadata.
func (c *client) Delete(ctx context.Context, id int64) error {
	var m *ledgerMetadata
	for {
		var version metadata.Version
		var err error
		if m, version, err = readMetadata(ctx, c.store, id); err != nil {
			return err
		}
		err = c.store.Delete(ctx, ledgerKey(id), version)
		if err == nil {
			break
		}
		if errors.Is(err, metadata.ErrNotFound) {
			return fmt.Errorf("%w: %d", ErrNoSuchLedger, id)
		}
		if !errors.Is(err, metadata.ErrBadVersion) {
			return fmt.Errorf("ledger: delete metadata of %d: %w", id, err)
		}
	}
	seen := map[string]bool{}
	var wg sync.WaitGroup
	for _, f := range m.Fragments {
		for _, addr := range f.Ensemble {
			if seen[addr] {
				continue
			}
			seen[addr] = true
			wg.Add(1)
			go func() {
				defer wg.Done()
				if err := c.bk.DeleteLedger(ctx, addr, id); err != nil {
					c.logger.Warn("bookie did not delete ledger; its garbage collection must", "ledger", id, "bookie", addr, "err", err)
				}
			}()
		}
	}
	wg.Wait()
	return nil
}
