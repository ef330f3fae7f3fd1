package lakehouse

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/magnetar-io/magnetar/internal/resources"
	"github.com/magnetar-io/magnetar/internal/topics"
)

// Admin endpoints (Pulsar's admin REST conventions; our own paths, doc.go):
//
//	GET|POST|DELETE /admin/v2/namespaces/{tenant}/{namespace}/icebergPolicies
//	GET|POST|DELETE /admin/v2/persistent/{tenant}/{namespace}/{topic}/icebergPolicies
//	GET             /admin/v2/persistent/{tenant}/{namespace}/{topic}/icebergStats
//	POST            /admin/v2/persistent/{tenant}/{namespace}/{topic}/icebergCompaction

// adminStatus is the one table from errors to the admin endpoints' HTTP statuses.
func adminStatus(err error) int {
	switch {
	case errors.Is(err, resources.ErrNotFound), errors.Is(err, ErrNoSuchTable), errors.Is(err, topics.ErrTopicNotFound):
		return http.StatusNotFound
	case errors.Is(err, ErrPolicy), errors.Is(err, errBadRequest), errors.Is(err, resources.ErrInvalid),
		errors.Is(err, topics.ErrInvalidTopicName):
		return http.StatusBadRequest
	case errors.Is(err, topics.ErrAuthorization):
		return http.StatusForbidden
	case errors.Is(err, topics.ErrAuthentication):
		return http.StatusUnauthorized
	}
	return http.StatusInternalServerError
}

func (s *Service) adminRoutes(mux *http.ServeMux, o HTTPOptions) {
	handle := func(pattern string, admin bool, fn func(*http.Request, topics.Name) (any, error)) {
		mux.HandleFunc(pattern, func(w http.ResponseWriter, r *http.Request) {
			n := topics.Name{Domain: topics.DomainPersistent, Tenant: r.PathValue("tenant"), Namespace: r.PathValue("namespace"), Local: r.PathValue("topic"), Partition: -1}
			if n.Local != "" {
				full, err := topics.ParseName("persistent://" + n.Tenant + "/" + n.Namespace + "/" + n.Local)
				if err != nil {
					writeJSON(w, http.StatusBadRequest, map[string]string{"reason": err.Error()})
					return
				}
				n = full
			}
			if o.Authorize != nil {
				if err := o.Authorize(r, n, admin); err != nil {
					writeJSON(w, adminStatus(err), map[string]string{"reason": err.Error()})
					return
				}
			}
			v, err := fn(r, n)
			switch {
			case err != nil:
				writeJSON(w, adminStatus(err), map[string]string{"reason": err.Error()})
			case v == nil:
				w.WriteHeader(http.StatusNoContent)
			default:
				writeJSON(w, http.StatusOK, v)
			}
		})
	}
	ns := "/admin/v2/namespaces/{tenant}/{namespace}/icebergPolicies"
	handle("GET "+ns, false, func(r *http.Request, n topics.Name) (any, error) {
		p, err := s.res.Namespace(r.Context(), n.Tenant, n.Namespace)
		if err != nil {
			return nil, err
		}
		return policyOrEmpty(p.IcebergPolicies), nil
	})
	handle("POST "+ns, true, func(r *http.Request, n topics.Name) (any, error) {
		p, err := readPolicies(r)
		if err != nil {
			return nil, err
		}
		return nil, s.res.UpdateNamespace(r.Context(), n.Tenant, n.Namespace, func(np *resources.Policies) error {
			np.IcebergPolicies = &p
			return nil
		})
	})
	handle("DELETE "+ns, true, func(r *http.Request, n topics.Name) (any, error) {
		return nil, s.res.UpdateNamespace(r.Context(), n.Tenant, n.Namespace, func(np *resources.Policies) error {
			np.IcebergPolicies = nil
			return nil
		})
	})
	tp := "/admin/v2/persistent/{tenant}/{namespace}/{topic}/icebergPolicies"
	handle("GET "+tp, false, func(r *http.Request, n topics.Name) (any, error) {
		p, err := s.res.TopicPolicies(r.Context(), n.Domain, n.Tenant, n.Namespace, n.Base().Local)
		if err != nil {
			return nil, err
		}
		if r.URL.Query().Get("applied") == "true" {
			nsp, err := s.res.Namespace(r.Context(), n.Tenant, n.Namespace)
			if err != nil {
				return nil, err
			}
			return mergePolicies(nsp.IcebergPolicies, p.IcebergPolicies), nil
		}
		return policyOrEmpty(p.IcebergPolicies), nil
	})
	handle("POST "+tp, true, func(r *http.Request, n topics.Name) (any, error) {
		p, err := readPolicies(r)
		if err != nil {
			return nil, err
		}
		if _, err := s.res.Namespace(r.Context(), n.Tenant, n.Namespace); err != nil {
			return nil, err
		}
		return nil, s.res.UpdateTopicPolicies(r.Context(), n.Domain, n.Tenant, n.Namespace, n.Base().Local, func(tp *resources.TopicPolicies) error {
			tp.IcebergPolicies = &p
			return nil
		})
	})
	handle("DELETE "+tp, true, func(r *http.Request, n topics.Name) (any, error) {
		return nil, s.res.UpdateTopicPolicies(r.Context(), n.Domain, n.Tenant, n.Namespace, n.Base().Local, func(tp *resources.TopicPolicies) error {
			tp.IcebergPolicies = nil
			return nil
		})
	})
	handle("GET /admin/v2/persistent/{tenant}/{namespace}/{topic}/icebergStats", false, func(r *http.Request, n topics.Name) (any, error) {
		b := n.Base()
		st := s.Stats(r.Context(), n)
		rec, _, err := s.cat.record(r.Context(), Ident{b.Tenant, b.Namespace, b.Local})
		out := map[string]any{"partitions": st}
		if err == nil {
			out["metadataLocation"] = rec.MetadataLocation
			out["committed"] = rec.Committed
			out["gaps"] = rec.Gaps
		} else if len(st) == 0 {
			return nil, err
		}
		return out, nil
	})
	handle("POST /admin/v2/persistent/{tenant}/{namespace}/{topic}/icebergCompaction", true, func(r *http.Request, n topics.Name) (any, error) {
		b := n.Base()
		files, err := s.Compact(r.Context(), Ident{b.Tenant, b.Namespace, b.Local})
		if err != nil {
			return nil, err
		}
		return map[string]int{"filesRewritten": files}, nil
	})
}

func policyOrEmpty(p *resources.IcebergPolicies) resources.IcebergPolicies {
	if p == nil {
		return resources.IcebergPolicies{}
	}
	return *p
}

// maxPolicyBody bounds a policy request's body.
const maxPolicyBody = 64 << 10

func readPolicies(r *http.Request) (resources.IcebergPolicies, error) {
	var p resources.IcebergPolicies
	body, err := io.ReadAll(io.LimitReader(r.Body, maxPolicyBody+1))
	if err != nil {
		return p, fmt.Errorf("%w: reading body: %w", errBadRequest, err)
	}
	if len(body) > maxPolicyBody {
		return p, fmt.Errorf("%w: body over %d bytes", errBadRequest, maxPolicyBody)
	}
	dec := json.NewDecoder(strings.NewReader(string(body)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&p); err != nil {
		return p, fmt.Errorf("%w: icebergPolicies JSON: %w", errBadRequest, err)
	}
	return p, ValidatePolicies(p)
}

// Mount serves the REST catalog under /iceberg and the admin endpoints above in front of
// next (the admin REST handler).
func (s *Service) Mount(next http.Handler, o HTTPOptions) http.Handler {
	mux := http.NewServeMux()
	s.restRoutes(mux, o)
	s.adminRoutes(mux, o)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p := r.URL.Path
		if p == Prefix || strings.HasPrefix(p, Prefix+"/") || isOurAdminPath(p) {
			mux.ServeHTTP(w, r)
			return
		}
		next.ServeHTTP(w, r)
	})
}

func isOurAdminPath(p string) bool {
	if !strings.HasPrefix(p, "/admin/v2/") {
		return false
	}
	return strings.HasSuffix(p, "/icebergPolicies") || strings.HasSuffix(p, "/icebergStats") || strings.HasSuffix(p, "/icebergCompaction")
}
