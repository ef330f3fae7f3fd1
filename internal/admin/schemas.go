package admin

import (
	"context"
	"fmt"
	"net/http"

	"github.com/magnetar-io/magnetar/internal/resources"
)

// registerSchemas answers the schema endpoints. There is no schema registry yet, so every
// topic has no schema: reads are 404 "schema not found" (what the Go client's HTTP lookup
// expects for a topic without one) and writes are 501.
func (s *server) registerSchemas(mux *http.ServeMux) {
	base := "/admin/v2/schemas/{tenant}/{namespace}/{topic}"
	for _, p := range []string{"GET " + base + "/schema", "GET " + base + "/schema/{version}", "GET " + base + "/schemas", "DELETE " + base + "/schema"} {
		mux.HandleFunc(p, s.handle(s.noSchema))
	}
	for _, p := range []string{"POST " + base + "/schema", "POST " + base + "/version", "POST " + base + "/compatibility"} {
		mux.HandleFunc(p, s.handle(func(context.Context, *http.Request) (any, error) {
			return nil, fmt.Errorf("%w: schema registry", ErrNotSupported)
		}))
	}
}

func (s *server) noSchema(ctx context.Context, r *http.Request) (any, error) {
	if err := s.checkNamespace(ctx, r.PathValue("tenant"), r.PathValue("namespace")); err != nil {
		return nil, err
	}
	return nil, fmt.Errorf("schema not found: %w", resources.ErrNotFound)
}
