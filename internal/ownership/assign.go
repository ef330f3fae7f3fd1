package ownership

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"time"

	"github.com/magnetar-io/magnetar/internal/resources"
)

// Assignment of free bundles, as in Pulsar's modular load manager: the leader decides. A
// broker that gets a non-authoritative lookup for a bundle nobody owns asks the leader over
// HTTP (GET /admin/v2/magnetar/assign/{tenant}/{ns}/{range}) which broker should take it,
// then answers Connect (and takes the bundle) when the answer is itself, else an
// authoritative Redirect to the chosen broker, which takes it.
//
// Why ask over HTTP rather than redirect the client to the leader: the client protocol
// stays one hop (the proxy and every client library follow one Redirect the same way), and
// the asking broker bounds the wait. When the leader is dead or unreachable (its election key
// outlives it by up to the lease TTL) the ask fails within leaderAskTimeout and the broker
// falls back to the same choice computed locally from the same metadata: a lookup is never
// blocked on the leader. A wrong choice is harmless: whoever takes the bundle does so with a
// NotExists put of the ownership key, so at most one broker wins.

// leaderAskTimeout bounds one question to the leader.
const leaderAskTimeout = 2 * time.Second

// assignment is a bundle the leader recently sent to a broker that has not taken it yet;
// counted as that broker's so a burst of lookups does not pile onto one broker before its
// ownership keys show up.
type assignment struct {
	instance string
	at       time.Time
}

// chooseOwner picks the broker that should take the free bundle b: the leader's choice, or
// the local one when this broker leads, is closing (excludeSelf) or the leader cannot answer.
func (m *Manager) chooseOwner(ctx context.Context, b resources.Bundle, excludeSelf bool) (BrokerInfo, error) {
	m.mu.Lock()
	leading := m.leader != nil
	m.mu.Unlock()
	if leading || excludeSelf {
		return m.leastLoaded(ctx, b, excludeSelf)
	}
	leaderURL, err := m.Leader(ctx)
	if err == nil && leaderURL != m.self.HTTPURL {
		actx, cancel := context.WithTimeout(ctx, leaderAskTimeout)
		bi, err := m.askLeader(actx, leaderURL, b)
		cancel()
		if err == nil && bi.PulsarServiceURL != "" {
			return bi, nil
		}
		m.log.Debug("leader did not assign; choosing locally", "bundle", b.String(), "leader", leaderURL, "err", err)
	}
	return m.leastLoaded(ctx, b, false)
}

// askLeaderHTTP is the default AskLeader.
func (m *Manager) askLeaderHTTP(ctx context.Context, leaderURL string, b resources.Bundle) (BrokerInfo, error) {
	i := strings.LastIndexByte(b.String(), '/')
	u := strings.TrimSuffix(leaderURL, "/") + "/admin/v2/magnetar/assign/" + b.String()[:i] + "/" + url.PathEscape(b.String()[i+1:])
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return BrokerInfo{}, err
	}
	resp, err := m.httpc.Do(req)
	if err != nil {
		return BrokerInfo{}, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return BrokerInfo{}, fmt.Errorf("%w: leader answered HTTP %d", ErrNoBroker, resp.StatusCode)
	}
	var bi BrokerInfo
	if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&bi); err != nil {
		return BrokerInfo{}, fmt.Errorf("ownership: leader's assignment: %w", err)
	}
	return bi, nil
}

// Assign is the leader's side: the broker that should take bundle "tenant/ns/0xlo_0xhi".
// A broker that does not lead refuses, so a stale leader key never makes two deciders.
func (m *Manager) Assign(ctx context.Context, ns, rng string) (BrokerInfo, error) {
	m.mu.Lock()
	leading := m.leader != nil
	m.mu.Unlock()
	if !leading {
		return BrokerInfo{}, fmt.Errorf("%w: this broker is not the leader", ErrNotOwner)
	}
	b, err := m.bundleByRange(ctx, ns, rng)
	if err != nil {
		return BrokerInfo{}, err
	}
	return m.leastLoaded(ctx, b, false)
}

// leastLoaded picks the live broker that should take bundle b by load score (loadscore.go),
// counting bundles from the ownership keys plus the leader's recent assignments. With
// excludeSelf, this broker is never chosen.
func (m *Manager) leastLoaded(ctx context.Context, b resources.Bundle, excludeSelf bool) (BrokerInfo, error) {
	live, err := m.LiveBrokers(ctx)
	if err != nil {
		return BrokerInfo{}, err
	}
	owners, err := m.Owners(ctx)
	if err != nil {
		return BrokerInfo{}, err
	}
	var cs []candidate
	for key, bi := range live {
		if excludeSelf && bi.Instance == m.self.Instance {
			continue
		}
		cs = append(cs, candidate{bi: bi, score: m.score.Score(bi.Load), tie: resources.TopicHash(b.String() + key)})
	}
	if len(cs) == 0 {
		if !excludeSelf {
			// Not registered yet (starting): take it ourselves.
			return BrokerInfo{Instance: m.self.Instance}, nil
		}
		return BrokerInfo{}, fmt.Errorf("%w for %s", ErrNoBroker, b)
	}
	count := map[string]int{}
	for _, od := range owners {
		count[od.Instance]++
	}
	m.mu.Lock()
	for bundle, a := range m.assigned {
		if _, owned := owners[bundle]; owned || time.Since(a.at) > m.ttl {
			delete(m.assigned, bundle)
			continue
		}
		if bundle != b.String() {
			count[a.instance]++
		}
	}
	m.mu.Unlock()
	for i := range cs {
		cs[i].bundles = count[cs[i].bi.Instance]
	}
	sort.Slice(cs, func(i, j int) bool { return m.score.less(cs[i], cs[j]) })
	m.mu.Lock()
	if m.leader != nil {
		m.assigned[b.String()] = assignment{instance: cs[0].bi.Instance, at: time.Now()}
	}
	m.mu.Unlock()
	return cs[0].bi, nil
}

func (m *Manager) assignRoute(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), leaderAskTimeout)
	defer cancel()
	bi, err := m.Assign(ctx, r.PathValue("tenant")+"/"+r.PathValue("namespace"), r.PathValue("bundle"))
	if err != nil {
		writeErr(w, http.StatusServiceUnavailable, err)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(bi)
}
