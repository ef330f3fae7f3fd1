package ledger

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/magnetar-io/magnetar/internal/bookieproto"
	"github.com/magnetar-io/magnetar/internal/config"
	"github.com/magnetar-io/magnetar/internal/metadata"
)

// bookieInfo is what the client knows about one registered bookie.
type bookieInfo struct {
	Address  string
	Rack     string
	Writable bool
}

// bookieSet tracks the bookies registered under bookieproto.RegistrationPrefix: a List at
// start, then a watch that is re-established (with a fresh List, since a watch that was
// cut may have missed deletions) whenever the store closes it.
type bookieSet struct {
	store  metadata.Store
	logger *slog.Logger

	mu      sync.Mutex
	bookies map[string]bookieInfo
	changed chan struct{} // closed and replaced on every change; waiters select on it
}

func newBookieSet(store metadata.Store, logger *slog.Logger) *bookieSet {
	return &bookieSet{store: store, logger: logger, bookies: map[string]bookieInfo{}, changed: make(chan struct{})}
}

// load replaces the known set with what the store lists now.
func (s *bookieSet) load(ctx context.Context) error {
	kvs, err := s.store.List(ctx, bookieproto.RegistrationPrefix)
	if err != nil {
		return fmt.Errorf("ledger: list bookies: %w", err)
	}
	m := make(map[string]bookieInfo, len(kvs))
	for _, kv := range kvs {
		if b, ok := s.parse(kv.Key, kv.Value); ok {
			m[b.Address] = b
		}
	}
	s.mu.Lock()
	s.bookies = m
	s.notifyLocked()
	s.mu.Unlock()
	return nil
}

// parse decodes a registration; a malformed one is logged and ignored rather than trusted.
func (s *bookieSet) parse(key string, value []byte) (bookieInfo, bool) {
	addr := strings.TrimPrefix(key, bookieproto.RegistrationPrefix)
	var r bookieproto.Registration
	if err := json.Unmarshal(value, &r); err != nil {
		s.logger.Warn("ignoring malformed bookie registration", "key", key, "err", err)
		return bookieInfo{}, false
	}
	if r.Address != "" {
		addr = r.Address
	}
	if addr == "" {
		return bookieInfo{}, false
	}
	return bookieInfo{Address: addr, Rack: r.Rack, Writable: r.State == bookieproto.StateWritable}, true
}

func (s *bookieSet) notifyLocked() {
	close(s.changed)
	s.changed = make(chan struct{})
}

// run keeps the set current until ctx is done.
func (s *bookieSet) run(ctx context.Context) {
	backoff := 50 * time.Millisecond
	for ctx.Err() == nil {
		ch, err := s.store.Watch(ctx, bookieproto.RegistrationPrefix, true)
		if err == nil {
			backoff = 50 * time.Millisecond
			for ev := range ch {
				s.apply(ev)
			}
		}
		if ctx.Err() != nil {
			return
		}
		s.logger.Warn("bookie registration watch ended; re-listing and watching again", "err", err)
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 5*time.Second)
		if err := s.load(ctx); err != nil {
			s.logger.Warn("re-listing bookies failed; retrying", "err", err)
		}
	}
}

func (s *bookieSet) apply(ev metadata.Event) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch ev.Type {
	case metadata.EventPut:
		if b, ok := s.parse(ev.Key, ev.Value); ok {
			s.bookies[b.Address] = b
		}
	case metadata.EventDelete:
		delete(s.bookies, strings.TrimPrefix(ev.Key, bookieproto.RegistrationPrefix))
	}
	s.notifyLocked()
}

// snapshot returns the known bookies.
func (s *bookieSet) snapshot() map[string]bookieInfo {
	s.mu.Lock()
	defer s.mu.Unlock()
	return maps.Clone(s.bookies)
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
