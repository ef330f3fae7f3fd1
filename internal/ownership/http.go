package ownership

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"time"

	"github.com/magnetar-io/magnetar/internal/metadata"
	"github.com/magnetar-io/magnetar/internal/resources"
)

// Handler wraps the admin HTTP handler for a cluster broker:
//   - topic endpoints (/admin/v2/{persistent|non-persistent}/t/ns/topic/...), the HTTP
//     lookup (/lookup/v2/topic/...) and the REST producer (/topics/...) of a topic served by
//     another broker answer 307 to that broker's HTTP URL (same path, authoritative=true), so
//     the request runs on the owner;
//   - the broker list, the leader and the bundle owners come from the metadata store;
//   - PUT /admin/v2/namespaces/{t}/{ns}/{bundle}/unload releases an owned bundle, .../split
//     splits it in two (split.go), PUT .../{ns}/unload releases every bundle of a namespace.
//   - namespace clear-backlog and unsubscribe go to every bundle's owner, their per-bundle
//     forms to the bundle's owner (nsverbs.go).
//
// Everything else goes to next unchanged.
func (m *Manager) Handler(next http.Handler) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/", next)
	for _, d := range []string{"persistent", "non-persistent"} {
		mux.HandleFunc("/admin/v2/"+d+"/{tenant}/{namespace}/{topic}/", m.topicRoute(next, d))
		mux.HandleFunc("/admin/v2/"+d+"/{tenant}/{namespace}/{topic}", m.topicRoute(next, d))
		mux.HandleFunc("POST /topics/"+d+"/{tenant}/{namespace}/{topic}", m.restProduceRoute(next, d))
		mux.HandleFunc("POST /topics/"+d+"/{tenant}/{namespace}/{topic}/partitions/{partition}", m.restProduceRoute(next, d))
	}
	mux.HandleFunc("GET /lookup/v2/topic/{domain}/{tenant}/{namespace}/{topic}", func(w http.ResponseWriter, r *http.Request) {
		m.topicRoute(next, r.PathValue("domain"))(w, r)
	})
	mux.HandleFunc("GET /admin/v2/brokers", m.jsonRoute(m.brokers))
	mux.HandleFunc("GET /admin/v2/brokers/{cluster}", m.jsonRoute(m.brokers))
	mux.HandleFunc("GET /admin/v2/brokers/leaderBroker", m.jsonRoute(m.leaderBroker))
	mux.HandleFunc("GET /admin/v2/brokers/{cluster}/{broker}/ownedNamespaces", m.jsonRoute(m.ownedNamespaces))
	mux.HandleFunc("GET /admin/v2/bundle-owners", m.jsonRoute(func(ctx context.Context, _ *http.Request) (any, error) {
		return m.Owners(ctx)
	}))
	mux.HandleFunc("GET /admin/v2/broker-load-reports", m.jsonRoute(func(ctx context.Context, _ *http.Request) (any, error) {
		return m.LiveBrokers(ctx)
	}))
	mux.HandleFunc("GET /admin/v2/magnetar/assign/{tenant}/{namespace}/{bundle}", m.assignRoute)
	mux.HandleFunc("PUT /admin/v2/namespaces/{tenant}/{namespace}/{bundle}/unload", m.unloadBundleRoute)
	mux.HandleFunc("PUT /admin/v2/namespaces/{tenant}/{namespace}/{bundle}/split", m.splitBundleRoute)
	mux.HandleFunc("PUT /admin/v2/namespaces/{tenant}/{namespace}/unload", m.unloadNamespaceRoute)
	m.registerNamespaceVerbs(mux, next) // nsverbs.go
	mux.HandleFunc("GET /admin/v2/namespaces/{tenant}/{namespace}/bundles", m.jsonRoute(func(ctx context.Context, r *http.Request) (any, error) {
		p, err := m.res.Namespace(ctx, r.PathValue("tenant"), r.PathValue("namespace"))
		if err != nil {
			return nil, err
		}
		return p.Bundles, nil
	}))
	return mux
}

// notRedirected are topic sub-resources that any broker serves (metadata only).
var notRedirected = map[string]bool{"partitions": true, "partitioned-stats": true, "partitioned-internalStats": true}

// fannedOut are the topic sub-resources the admin layer runs on each partition of a
// partitioned topic where that partition is served (admin/partitions.go), never on the
// partitioned name itself: for a partitioned topic they are served where they arrive, as
// Pulsar's brokers do, rather than at the owner of the partitioned name's bundle (which a
// lookup would assign for nothing).
var fannedOut = map[string]bool{"subscription": true, "subscriptions": true, "all_subscription": true, "unload": true}

// partitioned tells whether the topic in r's path is a partitioned topic.
func (m *Manager) partitioned(r *http.Request, domain string) bool {
	pm, err := m.res.PartitionedTopic(r.Context(), domain, r.PathValue("tenant"), r.PathValue("namespace"), r.PathValue("topic"))
	return err == nil && pm.Partitions > 0
}

func (m *Manager) topicRoute(next http.Handler, domain string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		sub := strings.TrimPrefix(r.URL.Path, "/admin/v2/"+domain+"/"+r.PathValue("tenant")+"/"+r.PathValue("namespace")+"/"+r.PathValue("topic"))
		first, _, _ := strings.Cut(strings.TrimPrefix(sub, "/"), "/")
		if domain != "persistent" && domain != "non-persistent" || notRedirected[first] ||
			(r.Method == http.MethodPut && sub == "") ||
			(r.Method == http.MethodGet && sub == "" && r.PathValue("topic") == "partitioned") || // list partitioned topics
			(fannedOut[first] || sub == "/terminate/partitions") && m.partitioned(r, domain) {
			next.ServeHTTP(w, r)
			return
		}
		topic := domain + "://" + r.PathValue("tenant") + "/" + r.PathValue("namespace") + "/" + r.PathValue("topic")
		m.toOwner(next, w, r, topic)
	}
}

// restProduceRoute sends a REST produce (POST /topics/..., admin/produce.go) to the owner of
// its topic or of the partition in its path. A partitioned topic without a partition is
// served where it arrives: the admin layer publishes to the partitions this broker owns, or
// redirects to a broker that owns some (Pulsar's TopicsBase).
func (m *Manager) restProduceRoute(next http.Handler, domain string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		topic := domain + "://" + r.PathValue("tenant") + "/" + r.PathValue("namespace") + "/" + r.PathValue("topic")
		if p := r.PathValue("partition"); p != "" {
			topic += "-partition-" + p
		} else if m.partitioned(r, domain) {
			next.ServeHTTP(w, r)
			return
		}
		m.toOwner(next, w, r, topic)
	}
}

// toOwner serves r here when this broker owns topic, and otherwise answers 307 to the owner
// (authoritative=true).
func (m *Manager) toOwner(next http.Handler, w http.ResponseWriter, r *http.Request, topic string) {
	ctx, cancel := context.WithTimeout(r.Context(), 30*time.Second)
	defer cancel()
	res, err := m.Lookup(ctx, topic, r.URL.Query().Get("authoritative") == "true")
	if err != nil {
		if errors.Is(err, resources.ErrNotFound) || errors.Is(err, resources.ErrInvalid) {
			next.ServeHTTP(w, r) // the admin layer words "no such namespace" itself
			return
		}
		writeErr(w, http.StatusServiceUnavailable, err)
		return
	}
	if res.Self {
		next.ServeHTTP(w, r)
		return
	}
	redirectAuthoritative(w, r, res.HTTPURL, r.URL.Path)
}

// redirectAuthoritative answers 307 to path on the broker at httpURL, with the request's
// query and authoritative=true, so that broker serves it instead of redirecting again.
func redirectAuthoritative(w http.ResponseWriter, r *http.Request, httpURL, path string) {
	q := r.URL.Query()
	q.Set("authoritative", "true")
	http.Redirect(w, r, strings.TrimSuffix(httpURL, "/")+path+"?"+q.Encode(), http.StatusTemporaryRedirect)
}

func (m *Manager) jsonRoute(f func(context.Context, *http.Request) (any, error)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		v, err := f(r.Context(), r)
		if err != nil {
			status := http.StatusInternalServerError
			if errors.Is(err, metadata.ErrNotFound) {
				status = http.StatusNotFound
			}
			writeErr(w, status, err)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(v)
	}
}

func writeErr(w http.ResponseWriter, status int, err error) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]string{"reason": err.Error()})
}

// hostOf strips the scheme of a URL ("http://h:p" -> "h:p"), Pulsar's broker id form.
func hostOf(u string) string {
	if _, rest, ok := strings.Cut(u, "://"); ok {
		return rest
	}
	return u
}

func (m *Manager) brokers(ctx context.Context, _ *http.Request) (any, error) {
	live, err := m.LiveBrokers(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]string, 0, len(live))
	for _, bi := range live {
		out = append(out, hostOf(bi.WebServiceURL))
	}
	sort.Strings(out)
	return out, nil
}

func (m *Manager) leaderBroker(ctx context.Context, _ *http.Request) (any, error) {
	u, err := m.Leader(ctx)
	if err != nil {
		return nil, err
	}
	return map[string]string{"brokerId": hostOf(u), "serviceUrl": u}, nil
}

// ownedNamespaces answers for the named broker (by HTTP host:port) from the ownership keys.
func (m *Manager) ownedNamespaces(ctx context.Context, r *http.Request) (any, error) {
	owners, err := m.Owners(ctx)
	if err != nil {
		return nil, err
	}
	type status struct {
		BrokerAssignment string `json:"broker_assignment"`
		IsControlled     bool   `json:"is_controlled"`
		IsActive         bool   `json:"is_active"`
	}
	out := map[string]status{}
	for bundle, od := range owners {
		if hostOf(od.HTTPURL) == r.PathValue("broker") {
			out[bundle] = status{BrokerAssignment: "primary", IsActive: true}
		}
	}
	return out, nil
}

// unloadBundleRoute releases a bundle this broker owns (its topics move on the next lookup)
// or sends the request to the owner.
func (m *Manager) unloadBundleRoute(w http.ResponseWriter, r *http.Request) {
	ns := r.PathValue("tenant") + "/" + r.PathValue("namespace")
	b, err := m.bundleByRange(r.Context(), ns, r.PathValue("bundle"))
	if err != nil {
		writeErr(w, http.StatusNotFound, err)
		return
	}
	if !m.Owned(b) {
		kv, err := m.store.Get(r.Context(), ownerKey(b))
		if errors.Is(err, metadata.ErrNotFound) {
			w.WriteHeader(http.StatusNoContent) // nobody owns it: nothing to unload
			return
		}
		var od OwnerData
		if err != nil || json.Unmarshal(kv.Value, &od) != nil {
			writeErr(w, http.StatusServiceUnavailable, fmt.Errorf("reading the owner of %s: %v", b, err))
			return
		}
		redirectAuthoritative(w, r, od.HTTPURL, r.URL.EscapedPath())
		return
	}
	if err := m.ReleaseBundle(r.Context(), b); err != nil {
		writeErr(w, http.StatusInternalServerError, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// unloadNamespaceRoute releases every owned bundle of a namespace, wherever it is owned.
func (m *Manager) unloadNamespaceRoute(w http.ResponseWriter, r *http.Request) {
	ns := r.PathValue("tenant") + "/" + r.PathValue("namespace")
	owners, byInstance, err := m.ownersAndBrokers(r.Context())
	if err != nil {
		writeErr(w, http.StatusServiceUnavailable, err)
		return
	}
	var errs []error
	for bundle, od := range owners {
		if !strings.HasPrefix(bundle, ns+"/") {
			continue
		}
		bi, ok := byInstance[od.Instance]
		if !ok {
			continue // its owner is gone; the key expires with its lease
		}
		if err := m.unloadAt(r.Context(), bi, bundle); err != nil {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		writeErr(w, http.StatusInternalServerError, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// ownersAndBrokers reads every bundle's owner and the live brokers by instance, for the
// namespace-wide routes that call each owner.
func (m *Manager) ownersAndBrokers(ctx context.Context) (map[string]OwnerData, map[string]BrokerInfo, error) {
	owners, err := m.Owners(ctx)
	if err != nil {
		return nil, nil, err
	}
	live, err := m.LiveBrokers(ctx)
	if err != nil {
		return nil, nil, err
	}
	byInstance := make(map[string]BrokerInfo, len(live))
	for _, bi := range live {
		byInstance[bi.Instance] = bi
	}
	return owners, byInstance, nil
}

func (m *Manager) bundleByRange(ctx context.Context, ns, rng string) (resources.Bundle, error) {
	// Fresh boundaries: an admin call may name a bundle a split on another broker just made.
	bounds, err := m.loadBoundaries(ctx, ns)
	if err != nil {
		return resources.Bundle{}, err
	}
	m.mu.Lock()
	m.bounds[ns] = bounds
	m.mu.Unlock()
	for i := 1; i < len(bounds); i++ {
		b := resources.Bundle{Namespace: ns, Lower: bounds[i-1], Upper: bounds[i]}
		if b.Range() == strings.ToLower(rng) {
			return b, nil
		}
	}
	return resources.Bundle{}, fmt.Errorf("%w: namespace %s has no bundle %s", metadata.ErrNotFound, ns, rng)
}

// ownerOf reads a bundle's owner; false when nobody owns it (or the value is unreadable).
func (m *Manager) ownerOf(r *http.Request, b resources.Bundle) (OwnerData, bool) {
	kv, err := m.store.Get(r.Context(), ownerKey(b))
	if err != nil {
		return OwnerData{}, false
	}
	var od OwnerData
	if json.Unmarshal(kv.Value, &od) != nil {
		return OwnerData{}, false
	}
	return od, true
}

// ReleaseBundle gives up one owned bundle: its topics are unloaded, then its key deleted,
// so the next lookup assigns it afresh (admin unload).
func (m *Manager) ReleaseBundle(ctx context.Context, b resources.Bundle) error {
	m.mu.Lock()
	delete(m.owned, b.String())
	u := m.unloader
	m.mu.Unlock()
	var errs []error
	if u != nil {
		errs = append(errs, u.UnloadTopics(ctx, func(topic string) bool {
			tb, err := m.BundleOf(ctx, topic)
			return err == nil && tb == b
		}))
	}
	if err := m.store.Delete(ctx, ownerKey(b), metadata.AnyVersion); err != nil && !errors.Is(err, metadata.ErrNotFound) {
		errs = append(errs, err)
	}
	m.log.Info("bundle released", "bundle", b.String())
	return errors.Join(errs...)
}
