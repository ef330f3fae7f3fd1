package admin

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/pprof"
	"net/url"
	"path"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/magnetar-io/magnetar/internal/resources"
	"github.com/magnetar-io/magnetar/internal/schema"
	"github.com/magnetar-io/magnetar/internal/topics"
	"github.com/magnetar-io/magnetar/internal/txn"
)

// maxBodyBytes bounds every request body the admin API reads.
const maxBodyBytes = 1 << 20

// Config is what the admin HTTP server needs.
type Config struct {
	Resources *resources.Resources
	Gatherer  prometheus.Gatherer // nil: /metrics serves the default registry
	Logger    *slog.Logger
	// Ready reports whether the process can serve; /status.html answers 503 until it does.
	Ready func() bool
	// Topics is the topic service behind the topic and subscription endpoints; nil answers
	// them 501.
	Topics *topics.Service
	// ServiceURL is the binary protocol URL lookups answer with (pulsar://host:port), from
	// the Pulsar front end.
	ServiceURL func() string
	// ServiceURLTLS is the pulsar+ssl:// URL lookups answer with ("" or nil: no TLS listener).
	ServiceURLTLS func() string
	// Storage shows bookie states and under-replicated ledgers; nil answers those 501.
	Storage Storage
	// Cluster is this broker's cluster name; WebServiceAddr its HTTP host:port and
	// WebServiceAddrTLS its HTTPS one ("" without).
	Cluster           string
	WebServiceAddr    string
	WebServiceAddrTLS string
	// Pprof serves Go's profiler under /debug/pprof/ (enablePprof).
	Pprof bool
	// MaxMessageSize bounds a REST-produced message (maxMessageSize; 0: Pulsar's 5 MiB).
	MaxMessageSize int
	// Schemas is the broker's schema registry; nil: one over Resources' store with the
	// default schema configuration.
	Schemas *schema.Registry
	// Dynamic is the broker's runtime-tunable configuration (/admin/v2/brokers/configuration);
	// nil lists no dynamic keys. Its TopicLevelMetrics also switches this API's per-topic
	// series to per-namespace ones.
	Dynamic DynamicConfig
	// Transactions are the transaction coordinators this broker serves
	// (/admin/v3/transactions, transactions.go); nil answers those endpoints 503.
	Transactions *txn.Coordinators
	// ForceDeleteNamespaceAllowed lets a namespace be deleted with its topics (?force=true,
	// forceDeleteNamespaceAllowed), ForceDeleteTenantAllowed a tenant with its namespaces
	// (forceDeleteTenantAllowed); off: 405, as Pulsar. With Dynamic, Dynamic's values rule.
	ForceDeleteNamespaceAllowed bool
	ForceDeleteTenantAllowed    bool
	// HTTPClient calls the broker that serves a topic in a cluster (nsdelete.go), with this
	// broker's credentials; nil: http.DefaultClient.
	HTTPClient *http.Client
	// Packages keeps the packages API's bytes (packages.go; enablePackagesManagement); nil
	// answers it 503. PackagesMaxBytes bounds one upload (packagesMaxSizeMB; 0: 256 MiB).
	Packages         PackageBlobs
	PackagesMaxBytes int64
}

// Handler returns the HTTP handler for the admin API, metrics and status page.
func Handler(cfg Config) http.Handler {
	s := &server{res: cfg.Resources, log: cfg.Logger, ready: cfg.Ready, storage: cfg.Storage,
		cluster: cfg.Cluster, webServiceAddr: cfg.WebServiceAddr, webServiceAddrTLS: cfg.WebServiceAddrTLS,
		serviceURLTLS: cfg.ServiceURLTLS, schemas: cfg.Schemas, dynamic: cfg.Dynamic, txn: cfg.Transactions,
		forceDeleteNamespace: cfg.ForceDeleteNamespaceAllowed, forceDeleteTenant: cfg.ForceDeleteTenantAllowed, httpc: cmp.Or(cfg.HTTPClient, http.DefaultClient),
		packages: cfg.Packages, packagesMaxBytes: cmp.Or(cfg.PackagesMaxBytes, 256<<20)}
	if cfg.Topics != nil {
		s.own = cfg.Topics.Ownership()
	}
	s.maxMessageSize = cmp.Or(cfg.MaxMessageSize, 5<<20)
	if cfg.Topics != nil {
		s.broker = topicsAPI{svc: cfg.Topics, serviceURL: cfg.ServiceURL}
	}
	if s.log == nil {
		s.log = slog.Default()
	}
	g := cfg.Gatherer
	if g == nil {
		g = prometheus.DefaultGatherer
	}
	if s.broker != nil {
		reg := prometheus.NewRegistry()
		reg.MustRegister(&topicCollector{broker: s.broker, cluster: cfg.Cluster, dynamic: cfg.Dynamic})
		g = prometheus.Gatherers{g, reg}
	}
	mux := http.NewServeMux()
	metrics := promhttp.HandlerFor(g, promhttp.HandlerOpts{})
	mux.Handle("GET /metrics", metrics)
	mux.Handle("GET /metrics/", metrics)
	mux.HandleFunc("GET /status.html", s.status)
	if cfg.Pprof {
		mux.HandleFunc("GET /debug/pprof/", pprof.Index)
		mux.HandleFunc("GET /debug/pprof/cmdline", pprof.Cmdline)
		mux.HandleFunc("GET /debug/pprof/profile", pprof.Profile)
		mux.HandleFunc("GET /debug/pprof/symbol", pprof.Symbol)
		mux.HandleFunc("GET /debug/pprof/trace", pprof.Trace)
	}

	mux.HandleFunc("GET /admin/v2/clusters", s.handle(s.listClusters))
	mux.HandleFunc("GET /admin/v2/clusters/{cluster}", s.handle(s.getCluster))
	mux.HandleFunc("GET /admin/v2/tenants", s.handle(s.listTenants))
	mux.HandleFunc("GET /admin/v2/tenants/{tenant}", s.handle(s.getTenant))
	mux.HandleFunc("PUT /admin/v2/tenants/{tenant}", s.handle(s.createTenant))
	mux.HandleFunc("POST /admin/v2/tenants/{tenant}", s.handle(s.updateTenant))
	mux.HandleFunc("DELETE /admin/v2/tenants/{tenant}", s.handle(s.deleteTenant))
	mux.HandleFunc("GET /admin/v2/namespaces/{tenant}", s.handle(s.listNamespaces))
	mux.HandleFunc("GET /admin/v2/namespaces/{tenant}/{namespace}", s.handle(s.getNamespace))
	mux.HandleFunc("PUT /admin/v2/namespaces/{tenant}/{namespace}", s.handle(s.createNamespace))
	mux.HandleFunc("DELETE /admin/v2/namespaces/{tenant}/{namespace}", s.handle(s.deleteNamespace))
	mux.HandleFunc("DELETE /admin/v2/namespaces/{tenant}/{namespace}/{bundle}", s.handle(s.deleteBundle)) // nsdelete.go
	s.registerPolicies(mux)
	s.registerClusterRates(mux) // policy_fields.go
	s.registerTopics(mux)
	s.registerTopicPolicies(mux)
	s.registerBrokers(mux)
	s.registerSchemas(mux)
	s.registerProduce(mux) // produce.go
	s.registerPermissions(mux)
	s.registerClusters(mux)
	s.registerNamespaceSubscriptions(mux)
	s.registerTransactions(mux) // transactions.go
	s.registerPackages(mux)     // packages.go
	return cleanPath(mux)
}

// cleanPath tolerates "//" and trailing slashes in request paths, as Pulsar's server does,
// and turns the mux's own plain-text 404 and 405 answers into {"reason"} bodies.
func cleanPath(next *http.ServeMux) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// Cleaned as escaped, as the mux matches: an escaped "/" inside a segment (a dynamic
		// configuration value holding a URL) is not a separator to squeeze.
		if p, ep := r.URL.Path, r.URL.EscapedPath(); p != "/" && p != "/metrics/" && !strings.HasPrefix(p, "/debug/pprof/") {
			if c := path.Clean(ep); c != ep {
				if up, err := url.PathUnescape(c); err == nil {
					r.URL.Path, r.URL.RawPath = up, c
				}
			}
		}
		if _, pattern := next.Handler(r); pattern == "" {
			rec := &statusRecorder{header: http.Header{}}
			next.ServeHTTP(rec, r)
			if rec.code == 0 {
				rec.code = http.StatusNotFound
			}
			if allow := rec.header.Get("Allow"); allow != "" {
				w.Header().Set("Allow", allow)
			}
			writeJSON(w, rec.code, map[string]string{"reason": fmt.Sprintf("%s %s: %s", r.Method, r.URL.Path, http.StatusText(rec.code))})
			return
		}
		next.ServeHTTP(w, r)
	})
}

// statusRecorder captures the status of the mux's built-in error answers.
type statusRecorder struct {
	header http.Header
	code   int
}

func (s *statusRecorder) Header() http.Header         { return s.header }
func (s *statusRecorder) Write(b []byte) (int, error) { return len(b), nil }
func (s *statusRecorder) WriteHeader(code int)        { s.code = code }

type server struct {
	res            *resources.Resources
	log            *slog.Logger
	ready          func() bool
	broker         Broker
	storage        Storage
	cluster        string
	webServiceAddr string
	// TLS side, for lookup answers (brokerUrlTls, httpUrlTls).
	webServiceAddrTLS string
	serviceURLTLS     func() string
	rates             rateTracker
	schemas           *schema.Registry
	dynamic           DynamicConfig
	// maxMessageSize bounds REST-produced messages.
	maxMessageSize int
	txn            *txn.Coordinators
	// forceDeleteNamespace allows DELETE namespace ?force=true and forceDeleteTenant DELETE
	// tenant ?force=true (without dynamic configuration); own is the cluster's bundle
	// ownership (nil in a standalone) and httpc reaches the other brokers (nsdelete.go).
	forceDeleteNamespace bool
	forceDeleteTenant    bool
	own                  topics.Ownership
	httpc                *http.Client
	// packages stores the packages API's bytes (nil: off) and packagesMaxBytes bounds one.
	packages         PackageBlobs
	packagesMaxBytes int64
}

// bodyWriter is a handler result that writes its own body (raw messages, plain text).
type bodyWriter interface {
	writeTo(w http.ResponseWriter)
}

// handlerFunc returns the value to encode as JSON (nil: 204 No Content) or an error.
type handlerFunc func(ctx context.Context, r *http.Request) (any, error)

func (s *server) handle(f handlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		v, err := f(r.Context(), r)
		if err != nil {
			if statusFor(err) >= 500 {
				s.log.Error("admin request failed", "method", r.Method, "path", r.URL.Path, "err", err)
			}
			writeError(w, r, err)
			return
		}
		if v == nil {
			w.WriteHeader(http.StatusNoContent)
			return
		}
		if bw, ok := v.(bodyWriter); ok {
			bw.writeTo(w)
			return
		}
		writeJSON(w, http.StatusOK, v)
	}
}

// decodeBody decodes an optional JSON body into v. An empty body or the JSON null leaves v
// as it is; unknown fields are ignored; malformed JSON is ErrBadRequest.
func decodeBody(r *http.Request, v any) error { return decodeBodyUpTo(r, v, maxBodyBytes) }

// decodeBodyUpTo is decodeBody with its own bound (the REST producer's bodies carry messages).
func decodeBodyUpTo(r *http.Request, v any, limit int) error {
	b, err := io.ReadAll(io.LimitReader(r.Body, int64(limit)+1))
	if err != nil {
		return fmt.Errorf("%w: reading body: %v", ErrBadRequest, err)
	}
	if len(b) > limit {
		return fmt.Errorf("%w: body larger than %d bytes", ErrBadRequest, limit)
	}
	if s := strings.TrimSpace(string(b)); s == "" || s == "null" {
		return nil
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("%w: invalid JSON body: %v", ErrBadRequest, err)
	}
	return nil
}

func (s *server) status(w http.ResponseWriter, _ *http.Request) {
	if s.ready != nil && !s.ready() {
		http.Error(w, "starting", http.StatusServiceUnavailable)
		return
	}
	w.Header().Set("Content-Type", "text/plain")
	_, _ = io.WriteString(w, "OK")
}

func (s *server) listClusters(ctx context.Context, _ *http.Request) (any, error) {
	return s.res.Clusters(ctx)
}

func (s *server) getCluster(ctx context.Context, r *http.Request) (any, error) {
	c, err := s.res.Cluster(ctx, r.PathValue("cluster"))
	if errors.Is(err, resources.ErrNotFound) {
		return nil, clusterMissing(r.PathValue("cluster"), err)
	}
	return s.withOwnURLs(r.PathValue("cluster"), c), err
}

func (s *server) listTenants(ctx context.Context, _ *http.Request) (any, error) {
	return s.res.Tenants(ctx)
}

func (s *server) getTenant(ctx context.Context, r *http.Request) (any, error) {
	t, err := s.res.Tenant(ctx, r.PathValue("tenant"))
	if errors.Is(err, resources.ErrNotFound) {
		return nil, tenantMissing(r.PathValue("tenant"), err)
	}
	return t, err
}

func (s *server) createTenant(ctx context.Context, r *http.Request) (any, error) {
	var t resources.TenantInfo
	if err := decodeBody(r, &t); err != nil {
		return nil, err
	}
	if err := s.checkClusters(ctx, t.AllowedClusters); err != nil {
		return nil, err
	}
	if err := s.res.CreateTenant(ctx, r.PathValue("tenant"), t); err != nil {
		if errors.Is(err, resources.ErrAlreadyExists) {
			return nil, withReason(reasonTenantExists, fmt.Errorf("tenant %s already exists: %w", r.PathValue("tenant"), err))
		}
		return nil, err
	}
	return nil, nil
}

func (s *server) updateTenant(ctx context.Context, r *http.Request) (any, error) {
	var t resources.TenantInfo
	if err := decodeBody(r, &t); err != nil {
		return nil, err
	}
	if err := s.checkClusters(ctx, t.AllowedClusters); err != nil {
		return nil, err
	}
	return nil, tenantErr(r, s.res.UpdateTenant(ctx, r.PathValue("tenant"), t))
}

func (s *server) listNamespaces(ctx context.Context, r *http.Request) (any, error) {
	ns, err := s.res.Namespaces(ctx, r.PathValue("tenant"))
	if errors.Is(err, resources.ErrNotFound) {
		return nil, withReason(reasonTenantsNamespaces, tenantMissing(r.PathValue("tenant"), err))
	}
	return ns, err
}

func (s *server) getNamespace(ctx context.Context, r *http.Request) (any, error) {
	p, err := s.res.Namespace(ctx, r.PathValue("tenant"), r.PathValue("namespace"))
	if errors.Is(err, resources.ErrNotFound) {
		return nil, s.namespaceMissingErr(ctx, r.PathValue("tenant"), r.PathValue("namespace"), err)
	}
	return p, err
}

func (s *server) createNamespace(ctx context.Context, r *http.Request) (any, error) {
	var p resources.Policies
	if err := decodeBody(r, &p); err != nil {
		return nil, err
	}
	err := s.res.CreateNamespace(ctx, r.PathValue("tenant"), r.PathValue("namespace"), p)
	switch {
	case errors.Is(err, resources.ErrAlreadyExists):
		return nil, withReason(reasonNamespaceExists, fmt.Errorf("namespace %s/%s already exists: %w", r.PathValue("tenant"), r.PathValue("namespace"), err))
	case errors.Is(err, resources.ErrNotFound): // its tenant
		return nil, tenantMissing(r.PathValue("tenant"), err)
	}
	return nil, err
}
