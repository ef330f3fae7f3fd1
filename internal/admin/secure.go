package admin

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/http"
	"path"
	"slices"
	"strings"

	"github.com/magnetar-io/magnetar/internal/auth"
	"github.com/magnetar-io/magnetar/internal/topics"
)

// Security of the HTTP side (Pulsar's AuthenticationFilter and the per-endpoint checks):
// Secure wraps a broker's whole HTTP handler (this package's, and the cluster routes the
// ownership layer serves before it), so no endpoint is reached unauthenticated or
// unauthorized, whoever serves it.
//
//   - Authentication per request (Authorization header, client certificate on 8443,
//     anonymousUserRole); a proxy role may name the client it forwards in
//     X-Original-Principal (from anyone else the header is refused).
//   - Authorization by the shape of the path (routeRule), with Pulsar's rules: clusters are
//     readable by any authenticated role and written by superusers; tenants, brokers,
//     bookies, dynamic configuration and the profiler are superuser business; a tenant and
//     its namespaces (policies, permissions, bundles) are its admins'; topic lists need
//     produce or consume on the namespace; topic stats and lookups need produce or consume;
//     the REST producer (POST /topics/...) needs produce;
//     subscriptions, peeking and reading messages need consume (and the subscription's own
//     rules); everything else about a topic (create, delete, terminate, unload, partitions,
//     topic policies, permissions, schema changes) is its tenant admins'. A path that fits no
//     shape is superuser-only.
//   - The principal goes into the request's context for the topic service, which checks
//     again what it is asked to do.
//
// The console's static files under /ui are open (its API calls are not). Functions, sources
// and sinks (/admin/v3) need the namespace's functions, sources or sinks permission; the
// functions worker's instance state service checks its own token. Packages (/admin/v3/packages)
// need the namespace's packages permission.
//
// /metrics and /status.html stay open (the Go client's CI waits on /metrics) unless
// authenticateMetricsEndpoint; health and readiness are superuser-only, as in Pulsar.

// SecureConfig is what Secure needs.
type SecureConfig struct {
	Authn *auth.Service
	Authz *auth.Authorizer
	// AuthenticateMetrics makes /metrics need authentication (authenticateMetricsEndpoint).
	AuthenticateMetrics bool
}

// OriginalPrincipalHeader is Pulsar's header a proxy uses to name the client it forwards.
const OriginalPrincipalHeader = "X-Original-Principal"

// Secure authenticates and authorizes every request before next sees it.
func Secure(next http.Handler, cfg SecureConfig) http.Handler {
	if !cfg.Authn.Enabled() {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p := path.Clean("/" + r.URL.Path)
		rule := routeRule(r.Method, p)
		if rule.open && !(cfg.AuthenticateMetrics && strings.HasPrefix(p, "/metrics")) {
			next.ServeHTTP(w, r)
			return
		}
		id, err := cfg.Authn.AuthenticateHTTP(r)
		if err != nil {
			writeJSON(w, http.StatusUnauthorized, map[string]string{"reason": err.Error()})
			return
		}
		pr := auth.Principal{Role: id.Role}
		if orig := r.Header.Get(OriginalPrincipalHeader); orig != "" {
			if !cfg.Authn.IsProxyRole(id.Role) || cfg.Authn.IsProxyRole(orig) {
				writeJSON(w, http.StatusUnauthorized, map[string]string{"reason": fmt.Sprintf("%s: %s may not name an original principal", auth.ErrAuthentication, id.Role)})
				return
			}
			pr.Original = orig
		}
		if err := rule.check(r, cfg.Authz, pr); err != nil {
			if rule.deniedFmt != "" {
				writeJSON(w, http.StatusUnauthorized, map[string]string{"reason": fmt.Sprintf(rule.deniedFmt, cmp.Or(pr.Original, pr.Role)), "detail": err.Error()})
				return
			}
			writeJSON(w, http.StatusForbidden, map[string]string{"reason": err.Error()})
			return
		}
		next.ServeHTTP(w, r.WithContext(topics.WithPrincipal(r.Context(), pr)))
	})
}

// rule is what a request needs.
type rule struct {
	open bool
	// kind is one of the checks below; the fields after it are their arguments.
	kind       string
	tenant, ns string
	topic      auth.Topic
	topicOp    auth.TopicOp
	nsOp       auth.NamespaceOp
	sub        string
	// deniedFmt, when set, is the 401 text a denied role gets (%s: the role) instead of
	// the 403 other routes answer: Pulsar's packages API answers so.
	deniedFmt string
}

func (ru rule) check(r *http.Request, a *auth.Authorizer, p auth.Principal) error {
	ctx := r.Context()
	switch ru.kind {
	case "authenticated":
		return nil
	case "tenant":
		return a.Tenant(ctx, p, ru.tenant, r.Method)
	case "namespace":
		return a.Namespace(ctx, p, ru.tenant, ru.ns, ru.nsOp)
	case "topic":
		return a.Topic(ctx, p, ru.topic, ru.topicOp, ru.sub)
	case "super":
		return a.SuperUser(p, r.Method, r.URL.Path)
	}
	return errors.New("admin: no rule") // unreachable: routeRule always sets a kind
}

// routeRule classifies a cleaned request path (see Secure).
func routeRule(method, p string) rule {
	super := rule{kind: "super"}
	seg := strings.Split(strings.TrimPrefix(p, "/"), "/")
	at := func(i int) string {
		if i < len(seg) {
			return seg[i]
		}
		return ""
	}
	switch {
	case p == "/metrics" || p == "/status.html" || strings.HasPrefix(p, "/metrics/"):
		return rule{open: true}
	case at(0) == "ui" && (method == http.MethodGet || method == http.MethodHead):
		// The console's page, scripts and config.json hold no data; its API calls carry the
		// token its login asks for and are judged like any other.
		return rule{open: true}
	case at(0) == "lookup" && at(1) == "v2" && at(2) == "topic" && len(seg) >= 7:
		return topicRule(at(3), at(4), at(5), at(6), auth.TopicLookup, "")
	case at(0) == "topics" && (at(1) == "persistent" || at(1) == "non-persistent") && len(seg) >= 5 && method == http.MethodPost:
		// The REST producer (produce.go): produce permission, as a PRODUCER command needs.
		return topicRule(at(1), at(2), at(3), at(4), auth.TopicProduce, "")
	case at(0) == "admin" && (at(1) == "v3" || (at(1) == "v2" && slices.Contains([]string{"functions", "sources", "sinks", "packages"}, at(2)))):
		// The functions worker and the packages API serve under v2 too (pulsaradmin's
		// default version).
		return v3Rule(method, seg)
	case at(0) == "iceberg" && at(1) == "v1":
		return icebergRule(seg)
	case at(0) != "admin" || at(1) != "v2":
		return super
	}
	switch at(2) {
	case "clusters":
		if method == http.MethodGet {
			return rule{kind: "authenticated"}
		}
		return super
	case "tenants":
		if len(seg) == 4 && method == http.MethodGet {
			return rule{kind: "tenant", tenant: at(3)}
		}
		return super
	case "namespaces":
		switch {
		case len(seg) == 4 && method == http.MethodGet:
			return rule{kind: "tenant", tenant: at(3)}
		case len(seg) < 5:
			return super
		case len(seg) == 6 && at(5) == "topics" && method == http.MethodGet:
			return rule{kind: "namespace", tenant: at(3), ns: at(4), nsOp: auth.NamespaceListTopics}
		case at(5) == "unsubscribe" || at(5) == "clearBacklog",
			method == http.MethodPost && len(seg) >= 7 && (at(6) == "unsubscribe" || at(6) == "clearBacklog"): // per bundle
			return rule{kind: "namespace", tenant: at(3), ns: at(4), nsOp: auth.NamespaceConsume}
		}
		return rule{kind: "namespace", tenant: at(3), ns: at(4), nsOp: auth.NamespaceAdmin}
	case "persistent", "non-persistent":
		switch {
		case len(seg) < 5:
			return super
		case len(seg) == 5 || (len(seg) == 6 && at(5) == "partitioned"):
			if method == http.MethodGet {
				return rule{kind: "namespace", tenant: at(3), ns: at(4), nsOp: auth.NamespaceListTopics}
			}
			return rule{kind: "namespace", tenant: at(3), ns: at(4), nsOp: auth.NamespaceAdmin}
		}
		op, sub := topicOpOf(method, seg[6:])
		return topicRule(at(2), at(3), at(4), at(5), op, sub)
	case "schemas":
		if len(seg) < 6 {
			return super
		}
		if method == http.MethodGet {
			return topicRule("persistent", at(3), at(4), at(5), auth.TopicLookup, "")
		}
		return topicRule("persistent", at(3), at(4), at(5), auth.TopicAdmin, "")
	}
	return super // brokers, bookies, bundle owners, load reports, broker-to-broker routes
}

// v3Rule classifies /admin/v3 paths. Functions, sources and sinks under a tenant and
// namespace need the namespace's functions, sources or sinks permission (tenant admins and
// superusers have them), as Pulsar's allowFunctionOps; the worker-wide paths (upload,
// download, reloads) are superusers'; the lists of built-in connectors need only
// authentication. Reading transactions (Pulsar checks nothing there but the coordinator's
// ownership; the Go client's TestTxn_* read transactionMetadata as the anonymous role) needs
// authentication, and a topic's transaction stats what its stats need. The rest of v3 is
// superusers'.
func v3Rule(method string, seg []string) rule {
	if len(seg) < 3 {
		return rule{kind: "super"}
	}
	if seg[2] == "transactions" && method == http.MethodGet && len(seg) >= 4 {
		switch {
		case len(seg) >= 7 && slices.Contains([]string{"transactionBufferStats", "pendingAckStats",
			"transactionInBufferStats", "transactionInPendingAckStats"}, seg[3]):
			return topicRule("persistent", seg[4], seg[5], seg[6], auth.TopicLookup, "")
		case slices.Contains([]string{"coordinatorStats", "transactionMetadata", "slowTransactions"}, seg[3]):
			return rule{kind: "authenticated"}
		}
	}
	if seg[2] == "packages" {
		// /admin/v3/packages/{type}/{tenant}/{namespace}/...: the namespace's packages
		// permission (PackagesBase.checkPermissions), a 401 with Pulsar's text when missing.
		if len(seg) >= 6 {
			return rule{kind: "namespace", tenant: seg[4], ns: seg[5], nsOp: auth.NamespacePackages,
				deniedFmt: "Role %s has not the 'package' permission to do the packages operations."}
		}
		return rule{kind: "super"}
	}
	if seg[2] == "functions-state" {
		// The functions worker's state service for its own instances: it takes only the
		// worker's per-process instance token (functions/api_state.go:instanceState), which
		// no authentication provider knows. Users read state under .../functions/.../state.
		return rule{open: true}
	}
	op, ok := map[string]auth.NamespaceOp{"functions": auth.NamespaceFunctions,
		"sources": auth.NamespaceSources, "sinks": auth.NamespaceSinks}[seg[2]]
	switch {
	case !ok:
	case len(seg) >= 5:
		return rule{kind: "namespace", tenant: seg[3], ns: seg[4], nsOp: op}
	case len(seg) == 4 && method == http.MethodGet &&
		slices.Contains([]string{"connectors", "builtins", "builtinsources", "builtinsinks"}, seg[3]):
		return rule{kind: "authenticated"}
	}
	return rule{kind: "super"}
}

// icebergRule classifies the Iceberg REST catalog (internal/lakehouse, /iceberg/v1/...): a
// table is its topic's data, so loading it needs consume on the topic; its namespace's
// table list needs the topic list permission; the catalog's config and namespace list need
// an authenticated role. The catalog's namespace is tenant 0x1F namespace. Changes are
// refused by the catalog itself (tables follow their topics).
func icebergRule(seg []string) rule {
	if len(seg) >= 4 && seg[2] == "namespaces" {
		tenant, ns, two := strings.Cut(seg[3], "\x1f")
		switch {
		case two && len(seg) >= 6 && seg[4] == "tables":
			return topicRule("persistent", tenant, ns, seg[5], auth.TopicConsume, "")
		case two && len(seg) == 5 && (seg[4] == "tables" || seg[4] == "views"):
			return rule{kind: "namespace", tenant: tenant, ns: ns, nsOp: auth.NamespaceListTopics}
		case len(seg) >= 5:
			return rule{kind: "super"}
		}
	}
	return rule{kind: "authenticated"}
}

// topicOpOf is what an operation on a topic needs, by what follows the topic in the path.
func topicOpOf(method string, rest []string) (auth.TopicOp, string) {
	first := ""
	if len(rest) > 0 {
		first = rest[0]
	}
	switch first {
	case "stats", "partitioned-stats", "internalStats", "internal-info", "lastMessageId", "partitioned-internalStats", "backlog":
		if method == http.MethodGet {
			return auth.TopicLookup, ""
		}
	case "partitions":
		if method == http.MethodGet {
			return auth.TopicLookup, ""
		}
	case "subscriptions", "ledger", "examinemessage", "messageid":
		if method == http.MethodGet {
			return auth.TopicConsume, ""
		}
	case "subscription":
		if len(rest) >= 2 {
			return auth.TopicConsume, rest[1]
		}
	case "all_subscription":
		return auth.TopicConsume, ""
	}
	return auth.TopicAdmin, ""
}

func topicRule(domain, tenant, ns, local string, op auth.TopicOp, sub string) rule {
	name := topics.Name{Domain: domain, Tenant: tenant, Namespace: ns, Local: local, Partition: -1}
	if n, err := topics.ParseName(name.String()); err == nil {
		name = n
	}
	return rule{kind: "topic", topic: auth.Topic{Tenant: tenant, Namespace: ns, Name: name.Base().String()}, topicOp: op, sub: sub}
}

// PackageUse is the check a front end other than the packages API applies before it reads a
// package for a request's caller (the functions worker's function:// URLs): the packages
// permission on the package's namespace, as the packages API asks (v3Rule).
func PackageUse(a *auth.Authorizer) func(ctx context.Context, tenant, namespace string) error {
	return func(ctx context.Context, tenant, namespace string) error {
		return a.Namespace(ctx, topics.PrincipalFrom(ctx), tenant, namespace, auth.NamespacePackages)
	}
}
