package lakehouse

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/magnetar-io/magnetar/internal/resources"
	"github.com/magnetar-io/magnetar/internal/topics"
)

// Prefix is where the Iceberg REST catalog is served on the HTTP port: engines are given
// http://<broker>:8080/iceberg as the catalog URI.
const Prefix = "/iceberg"

// HTTPOptions are the HTTP side's hooks.
type HTTPOptions struct {
	// Authorize, when set, is asked before every catalog and admin request: topic is the
	// table's topic (zero for catalog-wide requests), admin says whether the request changes
	// policies. nil allows everything (a broker without authentication).
	Authorize func(r *http.Request, topic topics.Name, admin bool) error
}

// restError is the REST protocol's ErrorModel.
type restError struct {
	Message string `json:"message"`
	Type    string `json:"type"`
	Code    int    `json:"code"`
}

// restStatus is the one table from errors to the REST catalog's error types and statuses.
func restStatus(err error) (int, string) {
	switch {
	case errors.Is(err, ErrNoSuchTable):
		return http.StatusNotFound, "NoSuchTableException"
	case errors.Is(err, ErrNoSuchNamespace), errors.Is(err, resources.ErrNotFound):
		return http.StatusNotFound, "NoSuchNamespaceException"
	case errors.Is(err, ErrReadOnly):
		return http.StatusForbidden, "ForbiddenException"
	case errors.Is(err, topics.ErrAuthorization):
		return http.StatusForbidden, "ForbiddenException"
	case errors.Is(err, topics.ErrAuthentication):
		return http.StatusUnauthorized, "NotAuthorizedException"
	case errors.Is(err, errBadRequest):
		return http.StatusBadRequest, "BadRequestException"
	}
	return http.StatusInternalServerError, "InternalServerError"
}

var errBadRequest = errors.New("bad request")

func writeRESTError(w http.ResponseWriter, err error) {
	code, typ := restStatus(err)
	writeJSON(w, code, map[string]restError{"error": {Message: err.Error(), Type: typ, Code: code}})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// restRoutes registers the catalog's endpoints (the Iceberg REST catalog OpenAPI spec).
func (s *Service) restRoutes(mux *http.ServeMux, o HTTPOptions) {
	p := Prefix + "/v1"
	handle := func(pattern string, fn func(*http.Request) (int, any, error)) {
		mux.HandleFunc(pattern, func(w http.ResponseWriter, r *http.Request) {
			code, v, err := fn(r)
			if err != nil {
				writeRESTError(w, err)
				return
			}
			if v == nil {
				w.WriteHeader(code)
				return
			}
			writeJSON(w, code, v)
		})
	}
	authz := func(r *http.Request, id *Ident) error {
		if o.Authorize == nil {
			return nil
		}
		var n topics.Name
		if id != nil {
			n = topics.Name{Domain: topics.DomainPersistent, Tenant: id.Tenant, Namespace: id.Namespace, Local: id.Table, Partition: -1}
		}
		return o.Authorize(r, n, false)
	}
	handle("GET "+p+"/config", func(r *http.Request) (int, any, error) {
		if err := authz(r, nil); err != nil {
			return 0, nil, err
		}
		return http.StatusOK, map[string]any{
			"defaults":  map[string]string{},
			"overrides": map[string]string{},
			// The spec's endpoint strings name the optional prefix even when there is none.
			"endpoints": []string{
				"GET /v1/{prefix}/namespaces", "GET /v1/{prefix}/namespaces/{namespace}", "HEAD /v1/{prefix}/namespaces/{namespace}",
				"GET /v1/{prefix}/namespaces/{namespace}/tables", "GET /v1/{prefix}/namespaces/{namespace}/tables/{table}",
				"HEAD /v1/{prefix}/namespaces/{namespace}/tables/{table}", "POST /v1/{prefix}/namespaces/{namespace}/tables/{table}/metrics",
				"GET /v1/{prefix}/namespaces/{namespace}/views",
			},
		}, nil
	})
	handle("GET "+p+"/namespaces", func(r *http.Request) (int, any, error) {
		if err := authz(r, nil); err != nil {
			return 0, nil, err
		}
		nss, err := s.namespaces(r, r.URL.Query().Get("parent"))
		if err != nil {
			return 0, nil, err
		}
		return http.StatusOK, map[string]any{"namespaces": nss}, nil
	})
	nsGet := func(r *http.Request) (int, any, error) {
		if err := authz(r, nil); err != nil {
			return 0, nil, err
		}
		levels := splitNamespace(r.PathValue("ns"))
		if err := s.namespaceExists(r, levels); err != nil {
			return 0, nil, err
		}
		if r.Method == http.MethodHead {
			return http.StatusNoContent, nil, nil
		}
		return http.StatusOK, map[string]any{"namespace": levels, "properties": map[string]string{}}, nil
	}
	handle("GET "+p+"/namespaces/{ns}", nsGet)
	handle("HEAD "+p+"/namespaces/{ns}", nsGet)
	handle("GET "+p+"/namespaces/{ns}/tables", func(r *http.Request) (int, any, error) {
		if err := authz(r, nil); err != nil {
			return 0, nil, err
		}
		levels := splitNamespace(r.PathValue("ns"))
		if err := s.namespaceExists(r, levels); err != nil {
			return 0, nil, err
		}
		ids := []map[string]any{}
		if len(levels) == 2 {
			ts, err := s.cat.Tables(r.Context(), levels[0], levels[1])
			if err != nil {
				return 0, nil, err
			}
			for _, t := range ts {
				ids = append(ids, map[string]any{"namespace": levels, "name": t.Table})
			}
		}
		return http.StatusOK, map[string]any{"identifiers": ids}, nil
	})
	handle("GET "+p+"/namespaces/{ns}/views", func(r *http.Request) (int, any, error) {
		return http.StatusOK, map[string]any{"identifiers": []any{}}, nil
	})
	loadTable := func(r *http.Request) (int, any, error) {
		id, err := tableIdent(r)
		if err != nil {
			return 0, nil, err
		}
		if err := authz(r, &id); err != nil {
			return 0, nil, err
		}
		rec, _, err := s.cat.record(r.Context(), id)
		if err != nil {
			return 0, nil, err
		}
		if r.Method == http.MethodHead {
			return http.StatusNoContent, nil, nil
		}
		md, err := s.cat.open(r.Context(), rec.MetadataLocation)
		if err != nil {
			return 0, nil, err
		}
		return http.StatusOK, map[string]any{
			"metadata-location": rec.MetadataLocation,
			"metadata":          md,
			"config":            s.clientConfig(),
		}, nil
	}
	handle("GET "+p+"/namespaces/{ns}/tables/{table}", loadTable)
	handle("HEAD "+p+"/namespaces/{ns}/tables/{table}", loadTable)
	handle("POST "+p+"/namespaces/{ns}/tables/{table}/metrics", func(r *http.Request) (int, any, error) {
		return http.StatusNoContent, nil, nil // scan reports: accepted and dropped
	})
	readOnly := func(r *http.Request) (int, any, error) {
		return 0, nil, fmt.Errorf("%w: %s %s (tables follow their topics; change the topic or its icebergPolicies)", ErrReadOnly, r.Method, r.URL.Path)
	}
	for _, pat := range []string{
		"POST " + p + "/namespaces", "DELETE " + p + "/namespaces/{ns}", "POST " + p + "/namespaces/{ns}/properties",
		"POST " + p + "/namespaces/{ns}/tables", "POST " + p + "/namespaces/{ns}/tables/{table}",
		"DELETE " + p + "/namespaces/{ns}/tables/{table}", "POST " + p + "/tables/rename",
		"POST " + p + "/namespaces/{ns}/register", "POST " + p + "/transactions/commit",
	} {
		handle(pat, readOnly)
	}
}

// clientConfig is the LoadTable answer's config: the warehouse's file IO settings (the
// REST catalog's s3.* property names) when icebergCatalogVendCredentials allows.
func (s *Service) clientConfig() map[string]string {
	c := map[string]string{}
	if !strings.HasPrefix(s.cfg.Warehouse, "s3://") {
		return c
	}
	if s.cfg.S3Endpoint != "" {
		c["s3.endpoint"] = s.cfg.S3Endpoint
		c["s3.path-style-access"] = "true"
	}
	c["s3.region"] = s.cfg.S3Region
	if s.cfg.VendCredentials && s.cfg.S3AccessKeyID != "" {
		c["s3.access-key-id"] = s.cfg.S3AccessKeyID
		c["s3.secret-access-key"] = s.cfg.S3SecretAccessKey
	}
	return c
}

// splitNamespace splits a namespace path parameter at the unit separator (0x1F).
func splitNamespace(ns string) []string { return strings.Split(ns, "\x1f") }

func tableIdent(r *http.Request) (Ident, error) {
	levels := splitNamespace(r.PathValue("ns"))
	if len(levels) != 2 {
		return Ident{}, fmt.Errorf("%w: namespace %q: tables are in tenant.namespace", ErrNoSuchTable, strings.Join(levels, "."))
	}
	return Ident{levels[0], levels[1], r.PathValue("table")}, nil
}

// namespaces lists the catalog namespaces under parent: tenants at the top, then their
// Pulsar namespaces.
func (s *Service) namespaces(r *http.Request, parent string) ([][]string, error) {
	out := [][]string{}
	if parent == "" {
		ts, err := s.res.Tenants(r.Context())
		if err != nil {
			return nil, err
		}
		for _, t := range ts {
			out = append(out, []string{t})
		}
		return out, nil
	}
	levels := splitNamespace(parent)
	if len(levels) != 1 {
		return out, nil // namespaces have no children
	}
	nss, err := s.res.Namespaces(r.Context(), levels[0])
	if err != nil {
		return nil, fmt.Errorf("%w: %s", ErrNoSuchNamespace, levels[0])
	}
	for _, ns := range nss { // "tenant/namespace"
		out = append(out, []string{levels[0], strings.TrimPrefix(ns, levels[0]+"/")})
	}
	return out, nil
}

func (s *Service) namespaceExists(r *http.Request, levels []string) error {
	switch len(levels) {
	case 1:
		ts, err := s.res.Tenants(r.Context())
		if err == nil && slices.Contains(ts, levels[0]) {
			return nil
		}
	case 2:
		if _, err := s.res.Namespace(r.Context(), levels[0], levels[1]); err == nil {
			return nil
		}
	}
	return fmt.Errorf("%w: %s", ErrNoSuchNamespace, strings.Join(levels, "."))
}
