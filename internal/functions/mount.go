package functions

import (
	"net/http"
	"strings"
	"sync/atomic"
)

// Mount routes the functions paths of an HTTP server to a worker set later, and the rest to
// the server's own handler: a composition root wraps its admin handler with Wrap before it
// serves, and calls Set once the worker has started (which needs the server's address).
// Until then the functions paths answer 503.
type Mount struct{ w atomic.Pointer[Worker] }

// Set makes w serve the functions paths (nil: 503 again).
func (m *Mount) Set(w *Worker) { m.w.Store(w) }

// Owns reports whether path belongs to the functions worker.
func Owns(path string) bool {
	return strings.HasPrefix(path, "/admin/v3/functions") || strings.HasPrefix(path, "/admin/v2/functions") ||
		strings.HasPrefix(path, "/admin/v2/worker") || ComponentOfPath(path) != ComponentFunction
}

// Wrap returns next with the functions paths taken over.
func (m *Mount) Wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		if !Owns(r.URL.Path) {
			next.ServeHTTP(rw, r)
			return
		}
		w := m.w.Load()
		if w == nil {
			writeError(rw, statusError(http.StatusServiceUnavailable, "the functions worker is not running on this broker (functionsWorkerEnabled)"))
			return
		}
		w.Handler().ServeHTTP(rw, r)
	})
}
