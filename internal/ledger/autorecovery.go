package ledger

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/magnetar-io/magnetar/internal/bookieproto"
	"github.com/magnetar-io/magnetar/internal/config"
	"github.com/magnetar-io/magnetar/internal/metadata"
	"github.com/magnetar-io/magnetar/internal/resources"
)

// Auto-recovery. One auditor in the cluster, elected through the metadata store, scans the
// ledger metadata every AuditorPeriodicCheckInterval. A bookie named in some fragment whose
// registration has been gone for LostBookieRecoveryDelay, or that is marked by Decommission
// (bookies.go), is lost: for each fragment holding it, the auditor picks a replacement bookie, copies the
// entries of the lost bookie's positions from surviving replicas with recovery adds, and
// only then swaps the bookie in the fragment by CAS. A crash between copy and CAS leaves
// harmless extra copies on the replacement.
//
// What it does not touch: the last fragment of an OPEN ledger (its writer replaces failed
// bookies itself by ensemble change, and the auditor changing it would fence the writer)
// and ledgers IN_RECOVERY (the recovering client's closing CAS expects its fragments
// unchanged). Both are counted as under-replicated until their owner moves on.
//
// Known limits, as in BookKeeper: with no spare bookie (E equals the number of bookies,
// #3905) nothing can be moved and the ledger stays under-replicated; an entry whose every
// replica is gone (Qw=1, #4872) is reported on every pass and skipped, never invented.

// AuditorOptions configures an Auditor.
type AuditorOptions struct {
	Config  config.LedgerClientConfig
	Store   metadata.Store
	Bookies bookieproto.Client
	Logger  *slog.Logger // nil discards
	// Registerer receives the under-replicated ledgers gauge; nil registers nothing.
	Registerer prometheus.Registerer
	// Name is published as the election value (e.g. the node's address).
	Name string
}

// Auditor re-replicates the fragments of lost bookies while it is the elected auditor.
type Auditor struct {
	c      *client
	name   string
	logger *slog.Logger
	gauge  prometheus.Gauge
	under  atomic.Int64 // what gauge was last set to, for tests and admin

	mu           sync.Mutex
	missingSince map[string]time.Time
}

// UnderReplicatedLedger is a ledger with at least one fragment on a bookie that is not
// registered.
type UnderReplicatedLedger struct {
	LedgerID int64
	Missing  []string // the unregistered bookies its fragments name, sorted
}

// NewAuditor builds an auditor; Run campaigns and works.
func NewAuditor(ctx context.Context, opts AuditorOptions) (*Auditor, error) {
	c, err := newClient(ctx, ClientOptions{Config: opts.Config, Store: opts.Store, Bookies: opts.Bookies, Logger: opts.Logger})
	if err != nil {
		return nil, err
	}
	a := &Auditor{
		c:      c,
		name:   opts.Name,
		logger: c.logger.With("component", "ledger-auditor"),
		gauge: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "magnetar_auditor_under_replicated_ledgers",
			Help: "Ledgers with a fragment on a bookie that is not registered, as of the auditor's last scan.",
		}),
		missingSince: map[string]time.Time{},
	}
	if opts.Registerer != nil {
		if err := opts.Registerer.Register(a.gauge); err != nil {
			c.Close()
			return nil, fmt.Errorf("ledger: register auditor metrics: %w", err)
		}
	}
	return a, nil
}

// Close stops the auditor's bookie watch. Stop Run first by cancelling its context.
func (a *Auditor) Close() error { return a.c.Close() }

// UnderReplicatedCount is the number of under-replicated ledgers found by the last Check.
func (a *Auditor) UnderReplicatedCount() int64 { return a.under.Load() }

// Run campaigns for the auditor election and, while elected, checks every
// AuditorPeriodicCheckInterval. It returns when ctx is done.
func (a *Auditor) Run(ctx context.Context) error {
	for ctx.Err() == nil {
		if err := a.lead(ctx); err != nil && ctx.Err() == nil {
			a.logger.Warn("auditor lost or could not win the election; campaigning again", "err", err)
			select {
			case <-ctx.Done():
			case <-time.After(time.Second):
			}
		}
	}
	return nil
}

func (a *Auditor) lead(ctx context.Context) error {
	sess, err := a.c.store.NewSession(ctx, a.c.cfg.AuditorSessionTimeout)
	if err != nil {
		return err
	}
	defer sess.Close()
	l, err := sess.Campaign(ctx, auditorElection, []byte(a.name))
	if err != nil {
		return err
	}
	a.logger.Info("elected auditor")
	t := time.NewTicker(a.c.cfg.AuditorPeriodicCheckInterval)
	defer t.Stop()
	for {
		if err := a.Check(ctx); err != nil && ctx.Err() == nil {
			a.logger.Warn("audit pass failed; retrying at the next interval", "err", err)
		}
		select {
		case <-ctx.Done():
			_ = l.Resign(context.Background())
			return ctx.Err()
		case <-l.Done():
			return errors.New("leadership ended")
		case <-sess.Done():
			return metadata.ErrSessionLost
		case <-t.C:
		}
	}
}

// Check runs one audit pass: update the gauge, then re-replicate what lost bookies held.
func (a *Auditor) Check(ctx context.Context) error {
	ledgers, registered, err := scanLedgers(ctx, a.c.store, a.logger)
	if err != nil {
		return err
	}
	decommissioned, err := a.c.store.List(ctx, decommissionPrefix)
	if err != nil {
		return fmt.Errorf("ledger: list decommissioned bookies: %w", err)
	}
	now := time.Now()
	a.mu.Lock()
	lost := map[string]bool{}
	for addr := range a.missingSince {
		if registered[addr] {
			delete(a.missingSince, addr)
		}
	}
	under := 0
	for _, l := range ledgers {
		missing := l.missing(registered)
		if len(missing) > 0 {
			under++
		}
		for _, addr := range missing {
			if _, ok := a.missingSince[addr]; !ok {
				a.missingSince[addr] = now
			}
		}
	}
	for addr, since := range a.missingSince {
		if now.Sub(since) >= a.c.cfg.LostBookieRecoveryDelay {
			lost[addr] = true
		}
	}
	for _, kv := range decommissioned {
		lost[strings.TrimPrefix(kv.Key, decommissionPrefix)] = true
	}
	a.mu.Unlock()
	a.gauge.Set(float64(under))
	a.under.Store(int64(under))
	if len(lost) == 0 {
		return nil
	}
	var errs []error
	for _, l := range ledgers {
		if !l.uses(lost) {
			continue
		}
		if err := a.replicateLedger(ctx, l.id, lost); err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// replicateLedger moves every fragment of ledger id it may touch off the lost bookies.
func (a *Auditor) replicateLedger(ctx context.Context, id int64, lost map[string]bool) error {
	logger := a.logger.With("ledger", id)
	for {
		m, version, err := readMetadata(ctx, a.c.store, id)
		if errors.Is(err, ErrNoSuchLedger) {
			return nil // deleted meanwhile
		}
		if err != nil {
			return err
		}
		fi, pos := findLost(m, lost)
		if fi < 0 {
			return nil
		}
		f := m.Fragments[fi]
		exclude := maps.Clone(lost)
		repl, err := a.c.placement().replacement(f.Ensemble, pos, m.WriteQuorum, exclude)
		if err != nil {
			return fmt.Errorf("ledger %d fragment %d: %w", id, f.FirstEntry, err)
		}
		if err := a.copyFragment(ctx, id, m, fi, pos, repl); err != nil {
			return err
		}
		_, _, err = updateMetadata(ctx, a.c.store, id, m, version, func(cur *ledgerMetadata) error {
			i := slices.IndexFunc(cur.Fragments, func(x fragment) bool { return x.FirstEntry == f.FirstEntry })
			if i < 0 || cur.Fragments[i].Ensemble[pos] != f.Ensemble[pos] || !mayRepair(cur, i) ||
				(i+1 < len(cur.Fragments)) != (fi+1 < len(m.Fragments)) {
				return errFragmentMoved
			}
			if slices.Contains(cur.Fragments[i].Ensemble, repl) {
				return errFragmentMoved
			}
			cur.Fragments[i].Ensemble[pos] = repl
			return nil
		})
		switch {
		case errors.Is(err, errFragmentMoved):
			logger.Info("fragment changed while re-replicating; re-reading", "fragment", f.FirstEntry)
		case err != nil:
			return err
		default:
			logger.Info("fragment re-replicated", "fragment", f.FirstEntry, "lost", f.Ensemble[pos], "replacement", repl)
		}
	}
}

var errFragmentMoved = errors.New("ledger: fragment changed during re-replication")

// mayRepair reports whether the auditor may change fragment i of m (see the package
// comment above).
func mayRepair(m *ledgerMetadata, i int) bool {
	switch m.State {
	case stateClosed:
		return true
	case stateOpen:
		return i < len(m.Fragments)-1
	}
	return false
}

// findLost returns a fragment index and position holding a lost bookie that the auditor
// may repair, or -1.
func findLost(m *ledgerMetadata, lost map[string]bool) (int, int) {
	for i, f := range m.Fragments {
		if !mayRepair(m, i) {
			continue
		}
		for pos, addr := range f.Ensemble {
			if lost[addr] {
				return i, pos
			}
		}
	}
	return -1, -1
}

// copyFragment copies the entries that position pos of fragment fi stores onto repl, in
// batches of MaxReadsInProgress: parallel reads from surviving replicas, then parallel
// recovery adds.
func (a *Auditor) copyFragment(ctx context.Context, id int64, m *ledgerMetadata, fi, pos int, repl string) error {
	first, last := m.Fragments[fi].FirstEntry, m.fragmentLast(fi)
	var batch []int64
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		defer func() { batch = batch[:0] }()
		payloads := make([][]byte, len(batch))
		errs := make([]error, len(batch))
		var wg sync.WaitGroup
		for i, e := range batch {
			wg.Add(1)
			go func() {
				defer wg.Done()
				payloads[i], _, errs[i] = a.c.readEntry(ctx, m, id, e)
			}()
		}
		wg.Wait()
		if err := errors.Join(errs...); err != nil {
			return fmt.Errorf("ledger %d: reading entries to re-replicate: %w", id, err)
		}
		done := make(chan error, len(batch))
		for i, e := range batch {
			actx, cancel := context.WithTimeout(ctx, a.c.cfg.AddEntryTimeout)
			req := bookieproto.AddRequest{LedgerID: id, EntryID: e, MasterKey: m.MasterKey, LAC: e - 1, Payload: payloads[i], Recovery: true}
			a.c.bk.AddEntry(actx, repl, req, func(err error) { cancel(); done <- err })
		}
		for range batch {
			if err := <-done; err != nil {
				errs = append(errs, err)
			}
		}
		if err := errors.Join(errs...); err != nil {
			return fmt.Errorf("ledger %d: copying entries to %s: %w", id, repl, err)
		}
		return nil
	}
	for e := first; e <= last; e++ {
		if !inWriteSet(e, pos, m.EnsembleSize, m.WriteQuorum) {
			continue
		}
		if batch = append(batch, e); len(batch) >= a.c.cfg.MaxReadsInProgress {
			if err := flush(); err != nil {
				return err
			}
		}
	}
	return flush()
}

// auditedLedger is one ledger as seen by a scan.
type auditedLedger struct {
	id   int64
	meta *ledgerMetadata
}

func (l auditedLedger) missing(registered map[string]bool) []string {
	set := map[string]bool{}
	for _, f := range l.meta.Fragments {
		for _, addr := range f.Ensemble {
			if !registered[addr] {
				set[addr] = true
			}
		}
	}
	out := slices.Collect(maps.Keys(set))
	sort.Strings(out)
	return out
}

func (l auditedLedger) uses(set map[string]bool) bool {
	for _, f := range l.meta.Fragments {
		for _, addr := range f.Ensemble {
			if set[addr] {
				return true
			}
		}
	}
	return false
}

// scanLedgers lists every ledger's metadata and the registered bookies.
func scanLedgers(ctx context.Context, store metadata.Store, logger *slog.Logger) ([]auditedLedger, map[string]bool, error) {
	regs, err := store.List(ctx, resources.BookieRegistrationsPrefix)
	if err != nil {
		return nil, nil, fmt.Errorf("ledger: list bookies: %w", err)
	}
	registered := map[string]bool{}
	for _, kv := range regs {
		registered[strings.TrimPrefix(kv.Key, resources.BookieRegistrationsPrefix)] = true
	}
	kvs, err := store.List(ctx, ledgersPrefix)
	if err != nil {
		return nil, nil, fmt.Errorf("ledger: list ledgers: %w", err)
	}
	out := make([]auditedLedger, 0, len(kvs))
	for _, kv := range kvs {
		id, ok := parseLedgerKey(kv.Key)
		if !ok {
			continue
		}
		m, err := decodeMetadata(kv.Value)
		if err != nil {
			logger.Error("skipping ledger with unreadable metadata", "ledger", id, "err", err)
			continue
		}
		out = append(out, auditedLedger{id: id, meta: m})
	}
	return out, registered, nil
}

// UnderReplicated lists the ledgers that have a fragment on a bookie that is not
// registered now, for `magnetar admin bookies under-replicated`.
func UnderReplicated(ctx context.Context, store metadata.Store) ([]UnderReplicatedLedger, error) {
	ledgers, registered, err := scanLedgers(ctx, store, slog.New(slog.DiscardHandler))
	if err != nil {
		return nil, err
	}
	var out []UnderReplicatedLedger
	for _, l := range ledgers {
		if missing := l.missing(registered); len(missing) > 0 {
			out = append(out, UnderReplicatedLedger{LedgerID: l.id, Missing: missing})
		}
	}
	return out, nil
}
