package functions

import (
	"log/slog"
	"net/http"
)

// AuthorizeForTest is the REST handler of a worker with only Authorize set.
func AuthorizeForTest(fn func(r *http.Request, tenant, namespace string) error) http.Handler {
	w := &Worker{opts: Options{Authorize: fn}, log: slog.New(slog.DiscardHandler)}
	return w.routes()
}
