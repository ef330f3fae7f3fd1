package ledger

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/magnetar-io/magnetar/internal/config"
	"github.com/magnetar-io/magnetar/internal/metadata"
	"github.com/magnetar-io/magnetar/internal/resources"
)

// bookieInfo is what the client knows about one registered bookie.
type bookieInfo struct {
	Address  string
	Rack     string
	Writable bool
}

// decommissionPrefix holds one key per bookie being decommissioned (Decommission): new
// ensembles avoid it and the auditor moves every fragment off it.
const decommissionPrefix = resources.DecommissionedBookiesPrefix

// bookieSet tracks the bookies registered under resources.BookieRegistrationsPrefix and the
// decommission markers: a List at start, then watches that are re-established (with a
// fresh List, since a watch that was cut may have missed deletions) whenever the store
// closes them.
type bookieSet struct {
	store  metadata.Store
	logger *slog.Logger

	mu             sync.Mutex
	bookies        map[string]bookieInfo
	decommissioned map[string]bool
	changed        chan struct{} // closed and replaced on every change; waiters select on it
}

func newBookieSet(store metadata.Store, logger *slog.Logger) *bookieSet {
	return &bookieSet{store: store, logger: logger, bookies: map[string]bookieInfo{},
		decommissioned: map[string]bool{}, changed: make(chan struct{})}
}

// load replaces the known sets with what the store lists now.
func (s *bookieSet) load(ctx context.Context) error {
	return errors.Join(s.loadPrefix(ctx, resources.BookieRegistrationsPrefix), s.loadPrefix(ctx, decommissionPrefix))
}

func (s *bookieSet) loadPrefix(ctx context.Context, prefix string) error {
	kvs, err := s.store.List(ctx, prefix)
	if err != nil {
		return fmt.Errorf("ledger: list %s: %w", prefix, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if prefix == decommissionPrefix {
		s.decommissioned = map[string]bool{}
	} else {
		s.bookies = map[string]bookieInfo{}
	}
	for _, kv := range kvs {
		s.applyLocked(prefix, metadata.Event{Type: metadata.EventPut, Key: kv.Key, Value: kv.Value})
	}
	s.notifyLocked()
	return nil
}

// parse decodes a registration (resources owns the record); a malformed one is logged and
// ignored rather than trusted.
func (s *bookieSet) parse(key string, value []byte) (bookieInfo, bool) {
	r, err := resources.ParseBookieRegistration(key, value)
	if err != nil {
		s.logger.Warn("ignoring malformed bookie registration", "key", key, "err", err)
		return bookieInfo{}, false
	}
	return bookieInfo{Address: r.Address, Rack: r.Rack, Writable: r.State == resources.BookieWritable}, true
}

func (s *bookieSet) notifyLocked() {
	close(s.changed)
	s.changed = make(chan struct{})
}

// run keeps the sets current until ctx is done.
func (s *bookieSet) run(ctx context.Context) {
	var wg sync.WaitGroup
	for _, prefix := range []string{resources.BookieRegistrationsPrefix, decommissionPrefix} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.watch(ctx, prefix)
		}()
	}
	wg.Wait()
}

func (s *bookieSet) watch(ctx context.Context, prefix string) {
	backoff := 50 * time.Millisecond
	for ctx.Err() == nil {
		ch, err := s.store.Watch(ctx, prefix, true)
		if err == nil {
			backoff = 50 * time.Millisecond
			for ev := range ch {
				s.mu.Lock()
				s.applyLocked(prefix, ev)
				s.notifyLocked()
				s.mu.Unlock()
			}
		}
		if ctx.Err() != nil {
			return
		}
		s.logger.Warn("bookie watch ended; re-listing and watching again", "prefix", prefix, "err", err)
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 5*time.Second)
		if err := s.loadPrefix(ctx, prefix); err != nil {
			s.logger.Warn("re-listing failed; retrying", "prefix", prefix, "err", err)
		}
	}
}

func (s *bookieSet) applyLocked(prefix string, ev metadata.Event) {
	addr := strings.TrimPrefix(ev.Key, prefix)
	if addr == "" {
		return // a key with no address names no bookie (FuzzBookieRecords)
	}
	switch {
	case prefix == decommissionPrefix && ev.Type == metadata.EventPut:
		s.decommissioned[addr] = true
	case prefix == decommissionPrefix:
		delete(s.decommissioned, addr)
	case ev.Type == metadata.EventPut:
		if b, ok := s.parse(ev.Key, ev.Value); ok {
			s.bookies[b.Address] = b
		}
	default:
		delete(s.bookies, addr)
	}
}

// snapshot returns the known bookies; decommissioned ones count as not writable.
func (s *bookieSet) snapshot() map[string]bookieInfo {
	s.mu.Lock()
	defer s.mu.Unlock()
	m := maps.Clone(s.bookies)
	for addr := range s.decommissioned {
		if b, ok := m[addr]; ok {
			b.Writable = false
			m[addr] = b
		}
	}
	return m
}

// isRegistered reports whether addr currently has a registration.
func (s *bookieSet) isRegistered(addr string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.bookies[addr]
	return ok
}

// placement chooses bookies for ensembles from a snapshot of the registered bookies.
type placement struct {
	policy  string
	bookies map[string]bookieInfo
}

// candidates lists the writable bookies not in exclude, shuffled.
func (p *placement) candidates(exclude map[string]bool) []bookieInfo {
	var out []bookieInfo
	for _, b := range p.bookies {
		if b.Writable && !exclude[b.Address] {
			out = append(out, b)
		}
	}
	rand.Shuffle(len(out), func(i, j int) { out[i], out[j] = out[j], out[i] })
	return out
}

func (p *placement) rackAware(c []bookieInfo) bool {
	if p.policy != config.PlacementRackAware {
		return false
	}
	for _, b := range c {
		if b.Rack != "" {
			return true
		}
	}
	return false
}

// newEnsemble chooses size distinct writable bookies. With racks, each position takes a
// bookie whose rack none of the Qw-1 positions before it (cyclically, as far as already
// chosen) uses, preferring racks with the most bookies left, so every write set spreads
// over racks where the racks allow it; otherwise the best available is used.
func (p *placement) newEnsemble(size, writeQuorum int, exclude map[string]bool) ([]string, error) {
	c := p.candidates(exclude)
	if len(c) < size {
		return nil, fmt.Errorf("%w: need %d, have %d", ErrNotEnoughBookies, size, len(c))
	}
	if !p.rackAware(c) {
		out := make([]string, size)
		for i := range out {
			out[i] = c[i].Address
		}
		return out, nil
	}
	ens := make([]bookieInfo, 0, size)
	for len(ens) < size {
		pos := len(ens)
		avoid := map[string]bool{}
		for k := 1; k < writeQuorum; k++ {
			if j := pos - k; j >= 0 {
				avoid[ens[j].Rack] = true
			}
			if j := pos + k - size; j >= 0 && j < len(ens) { // wraps around to the start
				avoid[ens[j].Rack] = true
			}
		}
		i := pickByRack(c, avoid)
		ens = append(ens, c[i])
		c = slices.Delete(c, i, i+1)
	}
	out := make([]string, size)
	for i, b := range ens {
		out[i] = b.Address
	}
	return out, nil
}

// replacement chooses one writable bookie for position pos of ensemble, not in the
// ensemble or exclude, preferring a rack that no write set through pos already uses.
func (p *placement) replacement(ensemble []string, pos, writeQuorum int, exclude map[string]bool) (string, error) {
	ex := map[string]bool{}
	maps.Copy(ex, exclude)
	for _, a := range ensemble {
		ex[a] = true
	}
	c := p.candidates(ex)
	if len(c) == 0 {
		return "", fmt.Errorf("%w: no spare bookie to replace %s", ErrNotEnoughBookies, ensemble[pos])
	}
	if !p.rackAware(c) {
		return c[0].Address, nil
	}
	avoid := map[string]bool{}
	n := len(ensemble)
	for k := 1; k < writeQuorum && k < n; k++ {
		for _, j := range []int{(pos + k) % n, (pos - k + n) % n} {
			if b, ok := p.bookies[ensemble[j]]; ok {
				avoid[b.Rack] = true
			}
		}
	}
	return c[pickByRack(c, avoid)].Address, nil
}

// pickByRack returns the index of a candidate whose rack is not avoided, from the rack with
// the most candidates (so big racks are used up first and small ones stay available for
// diversity), or index 0 when every rack is avoided.
func pickByRack(c []bookieInfo, avoid map[string]bool) int {
	count := map[string]int{}
	for _, b := range c {
		count[b.Rack]++
	}
	best := -1
	for i, b := range c {
		if avoid[b.Rack] {
			continue
		}
		if best < 0 || count[b.Rack] > count[c[best].Rack] {
			best = i
		}
	}
	if best < 0 {
		return 0
	}
	return best
}

// BookieStatus is one bookie as `magnetar admin bookies` lists it.
type BookieStatus struct {
	Address        string
	Rack           string
	State          string // resources.BookieWritable, StateReadOnly, or "gone" (decommissioned, no registration)
	Decommissioned bool
}

// ListBookies lists the registered bookies and the decommissioned ones, sorted by address.
func ListBookies(ctx context.Context, store metadata.Store) ([]BookieStatus, error) {
	s := newBookieSet(store, slog.New(slog.DiscardHandler))
	if err := s.load(ctx); err != nil {
		return nil, err
	}
	var out []BookieStatus
	for addr, b := range s.bookies {
		state := resources.BookieReadOnly
		if b.Writable {
			state = resources.BookieWritable
		}
		out = append(out, BookieStatus{Address: addr, Rack: b.Rack, State: state, Decommissioned: s.decommissioned[addr]})
	}
	for addr := range s.decommissioned {
		if _, ok := s.bookies[addr]; !ok {
			out = append(out, BookieStatus{Address: addr, State: "gone", Decommissioned: true})
		}
	}
	slices.SortFunc(out, func(a, b BookieStatus) int { return strings.Compare(a.Address, b.Address) })
	return out, nil
}

// Decommission marks a bookie for decommissioning: from now on no client places new
// ensembles on it, and the auditor moves every fragment off it without waiting for the
// grace period, as for a lost bookie. Stop the bookie once no ledger names it any more;
// stopping it earlier works too (the copies are then read from the other replicas).
func Decommission(ctx context.Context, store metadata.Store, addr string) error {
	if addr == "" || strings.Contains(addr, "/") {
		return fmt.Errorf("%w: bookie address %q", ErrBadArgument, addr)
	}
	if _, err := store.Put(ctx, decommissionPrefix+addr, []byte("{}"), metadata.AnyVersion); err != nil {
		return fmt.Errorf("ledger: decommission %s: %w", addr, err)
	}
	return nil
}

// Recommission removes a decommission mark.
func Recommission(ctx context.Context, store metadata.Store, addr string) error {
	err := store.Delete(ctx, decommissionPrefix+addr, metadata.AnyVersion)
	if err != nil && !errors.Is(err, metadata.ErrNotFound) {
		return fmt.Errorf("ledger: recommission %s: %w", addr, err)
	}
	return nil
}
