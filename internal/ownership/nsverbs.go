package ownership

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/magnetar-io/magnetar/internal/resources"
)

// Namespace-wide subscription verbs in a cluster (pulsar-admin namespaces clear-backlog,
// unsubscribe). A broker's admin layer acts only on the topics it serves, so here, as in
// Pulsar's NamespacesBase:
//
//   - POST /admin/v2/namespaces/{t}/{ns}/clearBacklog[/{sub}] and .../unsubscribe/{sub} send
//     the bundle form of the same verb to the owner of every bundle of the namespace, in
//     parallel, and answer 204 when every owner did, or the first failure as the owner
//     answered it. A bundle nobody owns is skipped, as Pulsar does: its topics are not
//     loaded anywhere, and its stored backlog stays until a verb reaches it loaded.
//   - POST .../{ns}/{bundle}/clearBacklog[/{sub}] and .../{bundle}/unsubscribe/{sub} run
//     here when this broker owns the bundle (or nobody does: loading its topics takes it),
//     and otherwise answer 307 to the owner (authoritative=true).
//
// DELETE .../{ns}/{bundle} (delete-bundle) runs on the bundle's owner too, which then
// releases the bundle (deleteBundleRoute).
//
// The calls to owners carry this broker's credentials (Options.HTTPClient); the caller was
// authorized once, on the broker it called (admin.Secure wraps this handler).

// nsVerbTimeout bounds a namespace-wide verb (every owner's answer).
const nsVerbTimeout = 60 * time.Second

// registerNamespaceVerbs adds the routes above to the ownership mux. The bundle forms are
// {bundle}/{verb}[/{sub}]: a literal verb would conflict with .../clearBacklog/{sub}; other
// verbs under that shape go to next unchanged.
func (m *Manager) registerNamespaceVerbs(mux *http.ServeMux, next http.Handler) {
	const ns = "POST /admin/v2/namespaces/{tenant}/{namespace}"
	mux.HandleFunc(ns+"/clearBacklog", m.fanOutRoute(next, "clearBacklog"))
	mux.HandleFunc(ns+"/clearBacklog/{sub}", m.fanOutRoute(next, "clearBacklog"))
	mux.HandleFunc(ns+"/unsubscribe/{sub}", m.fanOutRoute(next, "unsubscribe"))
	mux.HandleFunc(ns+"/{bundle}/{verb}", m.bundleVerbRoute(next))
	mux.HandleFunc(ns+"/{bundle}/{verb}/{sub}", m.bundleVerbRoute(next))
	mux.HandleFunc("DELETE /admin/v2/namespaces/{tenant}/{namespace}/{bundle}", m.deleteBundleRoute(next))
}

// fanOutRoute sends verb ("clearBacklog" or "unsubscribe", with the path's {sub} if any)
// to every bundle's owner.
func (m *Manager) fanOutRoute(next http.Handler, verb string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), nsVerbTimeout)
		defer cancel()
		ns := r.PathValue("tenant") + "/" + r.PathValue("namespace")
		bounds, err := m.loadBoundaries(ctx, ns)
		if err != nil {
			next.ServeHTTP(w, r) // the admin layer words a missing tenant or namespace
			return
		}
		owners, byInstance, err := m.ownersAndBrokers(ctx)
		if err != nil {
			writeErr(w, http.StatusServiceUnavailable, err)
			return
		}
		suffix := "/" + verb
		if sub := r.PathValue("sub"); sub != "" {
			suffix += "/" + url.PathEscape(sub)
		}
		var (
			wg    sync.WaitGroup
			mu    sync.Mutex
			first *ownerAnswer
		)
		for i := 1; i < len(bounds); i++ {
			b := resources.Bundle{Namespace: ns, Lower: bounds[i-1], Upper: bounds[i]}
			od, owned := owners[b.String()]
			bi, alive := byInstance[od.Instance]
			if !owned || !alive {
				continue // nothing loaded; a dead owner's key expires with its lease
			}
			u := strings.TrimSuffix(bi.WebServiceURL, "/") + "/admin/v2/namespaces/" + url.PathEscape(r.PathValue("tenant")) + "/" +
				url.PathEscape(r.PathValue("namespace")) + "/" + b.Range() + suffix + "?authoritative=true"
			wg.Add(1)
			go func() {
				defer wg.Done()
				if a := m.postTo(ctx, u); a != nil {
					mu.Lock()
					if first == nil {
						first = a
					}
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
		if first != nil {
			m.log.Warn("namespace verb failed on a bundle owner", "path", r.URL.Path, "owner", first.url, "status", first.status)
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(first.status)
			_, _ = w.Write(first.body)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	}
}

// ownerAnswer is a bundle owner's failed answer, passed on to the caller as it came.
type ownerAnswer struct {
	url    string
	status int
	body   []byte
}

// postTo POSTs to a bundle owner (following its redirect when the bundle moved meanwhile);
// nil on a 2xx answer.
func (m *Manager) postTo(ctx context.Context, u string) *ownerAnswer {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u, nil)
	if err != nil {
		return &ownerAnswer{url: u, status: http.StatusInternalServerError, body: reasonBody(err)}
	}
	resp, err := m.httpc.Do(req)
	if err != nil {
		return &ownerAnswer{url: u, status: http.StatusServiceUnavailable, body: reasonBody(fmt.Errorf("ownership: calling %s: %w", u, err))}
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 == 2 {
		return nil
	}
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<16))
	return &ownerAnswer{url: u, status: resp.StatusCode, body: body}
}

func reasonBody(err error) []byte {
	b, _ := json.Marshal(map[string]string{"reason": err.Error()})
	return b
}

func (m *Manager) bundleVerbRoute(next http.Handler) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		verb := r.PathValue("verb")
		if verb != "clearBacklog" && verb != "unsubscribe" {
			next.ServeHTTP(w, r)
			return
		}
		b, err := m.bundleByRange(r.Context(), r.PathValue("tenant")+"/"+r.PathValue("namespace"), r.PathValue("bundle"))
		if err != nil || !m.redirectToBundleOwner(w, r, b) {
			next.ServeHTTP(w, r) // here, or the admin layer words the missing namespace or bundle
		}
	}
}

// redirectToBundleOwner answers 307 (authoritative=true) to the broker owning b and says
// so; false when this broker owns it or nobody does (serve it here).
func (m *Manager) redirectToBundleOwner(w http.ResponseWriter, r *http.Request, b resources.Bundle) bool {
	if m.Owned(b) {
		return false
	}
	od, ok := m.ownerOf(r, b)
	if !ok || od.Instance == m.self.Instance {
		return false
	}
	redirectAuthoritative(w, r, od.HTTPURL, r.URL.EscapedPath())
	return true
}

// deleteBundleRoute is DELETE /admin/v2/namespaces/{t}/{ns}/{bundle} (pulsar-admin
// namespaces delete-bundle) in a cluster: on the owner (307 there otherwise) the admin
// layer refuses a bundle with topics unless forced and unloads its topics; then the owner
// gives the bundle up (ReleaseBundle), as Pulsar's removeOwnedServiceUnit does. No topic
// and no boundary is deleted: the next lookup of one of its topics assigns it afresh.
func (m *Manager) deleteBundleRoute(next http.Handler) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		b, err := m.bundleByRange(r.Context(), r.PathValue("tenant")+"/"+r.PathValue("namespace"), r.PathValue("bundle"))
		if err != nil {
			next.ServeHTTP(w, r) // the admin layer words the missing namespace or bundle
			return
		}
		if m.redirectToBundleOwner(w, r, b) {
			return
		}
		rec := &bufferedResponse{header: http.Header{}}
		next.ServeHTTP(rec, r)
		if rec.status/100 == 2 && m.Owned(b) {
			if err := m.ReleaseBundle(r.Context(), b); err != nil {
				writeErr(w, http.StatusInternalServerError, err)
				return
			}
		}
		rec.writeTo(w)
	}
}

// bufferedResponse holds the admin layer's answer until the bundle is released.
type bufferedResponse struct {
	header http.Header
	status int
	body   []byte
}

func (b *bufferedResponse) Header() http.Header { return b.header }
func (b *bufferedResponse) WriteHeader(code int) {
	if b.status == 0 {
		b.status = code
	}
}
func (b *bufferedResponse) Write(p []byte) (int, error) {
	b.WriteHeader(http.StatusOK)
	b.body = append(b.body, p...)
	return len(p), nil
}

func (b *bufferedResponse) writeTo(w http.ResponseWriter) {
	for k, v := range b.header {
		w.Header()[k] = v
	}
	w.WriteHeader(cmp.Or(b.status, http.StatusOK))
	_, _ = w.Write(b.body)
}
