package ownership

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"

	"github.com/magnetar-io/magnetar/internal/metadata"
	"github.com/magnetar-io/magnetar/internal/resources"
)

// Bundle split: the owner of a bundle [lo, hi) cuts it at mid = lo + (hi-lo)/2 into two
// bundles, which the next lookups assign afresh (Pulsar's range_equally_divide with
// unload=true). Order, on the owner:
//
//  1. forget the bundle locally (our own lookups of it now wait for its key to go),
//  2. unload its topics,
//  3. CAS the namespace policies: insert mid into the boundaries,
//  4. delete the bundle's ownership key.
//
// Other brokers may still cache the old boundaries. One of them can take the old bundle's
// key after step 4; its take then re-reads the boundaries (stillABundle), which are already
// new because step 3 came before step 4 and etcd is linearizable, finds the bundle gone,
// deletes the key again and retries with fresh boundaries. So no broker ever serves a topic
// under a bundle that no longer exists, and two owners never hold overlapping ranges.

// ErrSplit: the bundle cannot be split (too small, not ours, or changed meanwhile).
var ErrSplit = errors.New("ownership: cannot split bundle")

// stillABundle checks, after we created b's ownership key (at version ver), that b is still
// a bundle of its namespace; if a split removed it, the key is deleted again, the cached
// boundaries refreshed, and false returned so the caller looks the topic up again.
func (m *Manager) stillABundle(ctx context.Context, b resources.Bundle, ver metadata.Version) (bool, error) {
	fresh, err := m.loadBoundaries(ctx, b.Namespace)
	if err != nil {
		return false, err
	}
	m.mu.Lock()
	m.bounds[b.Namespace] = fresh
	m.mu.Unlock()
	if got := resources.FindBundle(b.Namespace, fresh, b.Lower); got == b {
		return true, nil
	}
	if err := m.store.Delete(ctx, ownerKey(b), ver); err != nil && !errors.Is(err, metadata.ErrNotFound) {
		return false, fmt.Errorf("ownership: dropping the key of split bundle %s: %w", b, err)
	}
	m.log.Info("bundle was split meanwhile; looking up again", "bundle", b.String())
	return false, nil
}

// SplitBundle splits a bundle this broker owns (taking it first if nobody does) into two
// halves and releases it; it returns the two new bundles.
func (m *Manager) SplitBundle(ctx context.Context, b resources.Bundle) ([2]resources.Bundle, error) {
	var halves [2]resources.Bundle
	if b.Upper-b.Lower < 2 {
		return halves, fmt.Errorf("%w: %s is too small", ErrSplit, b)
	}
	if !m.Owned(b) {
		ok, err := m.take(ctx, b)
		if err != nil {
			return halves, err
		}
		if !ok {
			return halves, fmt.Errorf("%w: %s is owned by another broker", ErrSplit, b)
		}
	}
	if held, err := m.verifyHeld(ctx, b); err != nil || !held {
		return halves, errors.Join(fmt.Errorf("%w: %s is no longer ours", ErrSplit, b), err)
	}
	mid := b.Lower + (b.Upper-b.Lower)/2
	halves = [2]resources.Bundle{{Namespace: b.Namespace, Lower: b.Lower, Upper: mid}, {Namespace: b.Namespace, Lower: mid, Upper: b.Upper}}

	m.mu.Lock()
	delete(m.owned, b.String())
	u := m.unloader
	m.mu.Unlock()
	if u != nil {
		if err := u.UnloadTopics(ctx, func(topic string) bool {
			tb, err := m.BundleOf(ctx, topic)
			return err == nil && tb == b
		}); err != nil {
			m.log.Warn("unloading topics of a bundle being split", "bundle", b.String(), "err", err)
		}
	}
	tenant, ns, _ := strings.Cut(b.Namespace, "/")
	err := m.res.UpdateNamespace(ctx, tenant, ns, func(p *resources.Policies) error {
		if p.Bundles == nil {
			return fmt.Errorf("%w: namespace %s has no bundles", ErrSplit, b.Namespace)
		}
		bs, err := resources.ParseBoundaries(p.Bundles.Boundaries)
		if err != nil {
			return err
		}
		i := slices.Index(bs, b.Lower)
		if i < 0 || i+1 >= len(bs) || bs[i+1] != b.Upper {
			return fmt.Errorf("%w: %s is no longer a bundle of %s", ErrSplit, b.Range(), b.Namespace)
		}
		p.Bundles.Boundaries = slices.Insert(p.Bundles.Boundaries, i+1, fmt.Sprintf("0x%08x", mid))
		p.Bundles.NumBundles = len(p.Bundles.Boundaries) - 1
		return nil
	})
	m.mu.Lock()
	delete(m.bounds, b.Namespace) // re-read on next use, split or not
	m.mu.Unlock()
	if delErr := m.store.Delete(ctx, ownerKey(b), metadata.AnyVersion); delErr != nil && !errors.Is(delErr, metadata.ErrNotFound) {
		err = errors.Join(err, delErr)
	}
	if err != nil {
		return halves, err
	}
	m.log.Info("bundle split", "bundle", b.String(), "into", halves[0].Range()+","+halves[1].Range())
	return halves, nil
}

// splitBundleRoute splits a bundle on its owner (redirecting there when another broker
// owns it): PUT /admin/v2/namespaces/{t}/{ns}/{bundle}/split.
func (m *Manager) splitBundleRoute(w http.ResponseWriter, r *http.Request) {
	ns := r.PathValue("tenant") + "/" + r.PathValue("namespace")
	b, err := m.bundleByRange(r.Context(), ns, r.PathValue("bundle"))
	if err != nil {
		writeErr(w, http.StatusNotFound, err)
		return
	}
	if !m.Owned(b) {
		if od, ok := m.ownerOf(r, b); ok && od.Instance != m.self.Instance {
			redirectAuthoritative(w, r, od.HTTPURL, r.URL.EscapedPath())
			return
		}
	}
	if _, err := m.SplitBundle(r.Context(), b); err != nil {
		status := http.StatusInternalServerError
		if errors.Is(err, ErrSplit) {
			status = http.StatusPreconditionFailed
		}
		writeErr(w, status, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// SplitLimits trigger automatic splits of bundles this broker holds (Pulsar's
// loadBalancerNamespaceBundleMax* keys); a zero limit is not checked.
type SplitLimits struct {
	MaxTopics   int // loaded topics in one bundle
	MaxSessions int // producers + consumers on one bundle's topics
	MaxBundles  int // a namespace is never split beyond this many bundles
	// MaxMsgRate (msg/s, in+out) and MaxBandwidthMB (MB/s, in+out) of one bundle, from the
	// rates sampled at each load report (bundlestats.go).
	MaxMsgRate     float64
	MaxBandwidthMB float64
}

// TopicLoad is one loaded topic's weight for automatic splits and per-bundle rates.
type TopicLoad struct {
	Topic    string
	Sessions int
	// Running totals of messages and bytes in+out (the rates come from two samples).
	MsgsTotal, BytesTotal int64
}

// TopicLister is implemented by an Unloader that can list its loaded topics (the broker
// does); automatic splits need it.
type TopicLister interface {
	LoadedTopicLoads() []TopicLoad
}

// overLimits says which split limit a bundle's stats exceed ("" for none).
func (lim SplitLimits) overLimits(st BundleStats) string {
	switch {
	case lim.MaxTopics > 0 && st.Topics > lim.MaxTopics:
		return "topics"
	case lim.MaxSessions > 0 && st.Sessions > lim.MaxSessions:
		return "sessions"
	case lim.MaxMsgRate > 0 && st.MsgRate > lim.MaxMsgRate:
		return "message rate"
	case lim.MaxBandwidthMB > 0 && st.Bandwidth > lim.MaxBandwidthMB*(1<<20):
		return "bandwidth"
	}
	return ""
}

// autoSplit splits at most one held bundle whose stats (sampled at this load report)
// exceed a limit.
func (m *Manager) autoSplit(ctx context.Context, per map[string]BundleStats) {
	lim := m.split
	for _, name := range slices.Sorted(maps.Keys(per)) {
		st := per[name]
		why := lim.overLimits(st)
		if why == "" {
			continue
		}
		b := st.bundle
		m.mu.Lock()
		n := len(m.bounds[b.Namespace]) - 1
		m.mu.Unlock()
		if lim.MaxBundles > 0 && n >= lim.MaxBundles {
			continue
		}
		if _, err := m.SplitBundle(ctx, b); err != nil {
			m.log.Warn("automatic bundle split", "bundle", name, "err", err)
		} else {
			m.log.Info("bundle split automatically", "bundle", name, "over", why,
				"topics", st.Topics, "sessions", st.Sessions, "msgRate", st.MsgRate, "bytesRate", st.Bandwidth)
		}
		return
	}
}
