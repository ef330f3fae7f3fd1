package admin

import (
	"context"
	"fmt"
	"net/http"
	"regexp"
	"slices"

	"github.com/magnetar-io/magnetar/internal/resources"
)

// Topic permissions (pulsar-admin topics grant-permission / revoke-permission / permissions)
// live where Pulsar keeps them: in the namespace's policies, under
// auth_policies.destination_auth[full topic name][role]. GET answers the effective
// permissions: the namespace's, then the partitioned parent's, then the topic's own, a later
// grant for a role replacing an earlier one. Subscription permissions (which roles may use
// a subscription name) are auth_policies.subscription_auth_roles[sub]. internal/auth's
// Authorizer enforces all of them (auth/authz.go) once authorizationEnabled is set.
func (s *server) registerPermissions(mux *http.ServeMux) {
	for _, d := range []string{"persistent", "non-persistent"} {
		t := "/admin/v2/" + d + "/{tenant}/{namespace}/{topic}/permissions"
		mux.HandleFunc("GET "+t, s.handle(s.topicPermissions))
		mux.HandleFunc("POST "+t+"/{role}", s.handle(s.grantTopicPermission))
		mux.HandleFunc("DELETE "+t+"/{role}", s.handle(s.revokeTopicPermission))
	}
	const ns = "/admin/v2/namespaces/{tenant}/{namespace}/"
	mux.HandleFunc("GET "+ns+"bundles", s.handle(s.namespaceBundles))
	mux.HandleFunc("GET /lookup/v2/topic/{domain}/{tenant}/{namespace}/{topic}/bundle", s.handle(s.topicBundle))
	mux.HandleFunc("GET "+ns+"permissions/subscription", s.handle(s.subscriptionPermissions))
	mux.HandleFunc("POST "+ns+"permissions/subscription/{sub}", s.handle(s.grantSubscriptionPermission))
	mux.HandleFunc("DELETE "+ns+"permissions/{sub}/{role}", s.handle(s.revokeSubscriptionPermission))
}

func (s *server) subscriptionPermissions(ctx context.Context, r *http.Request) (any, error) {
	p, err := s.namespacePolicies(ctx, r)
	if err != nil {
		return nil, err
	}
	if p.AuthPolicies.SubscriptionAuthRoles == nil {
		return map[string][]string{}, nil
	}
	return p.AuthPolicies.SubscriptionAuthRoles, nil
}

// grantSubscriptionPermission sets the roles allowed on a subscription (body: role list).
func (s *server) grantSubscriptionPermission(ctx context.Context, r *http.Request) (any, error) {
	var roles []string
	if err := decodeBody(r, &roles); err != nil {
		return nil, err
	}
	return nil, s.updatePolicies(ctx, r, func(p *resources.Policies) error {
		if p.AuthPolicies.SubscriptionAuthRoles == nil {
			p.AuthPolicies.SubscriptionAuthRoles = map[string][]string{}
		}
		merged := p.AuthPolicies.SubscriptionAuthRoles[r.PathValue("sub")]
		for _, role := range roles {
			if !slices.Contains(merged, role) {
				merged = append(merged, role)
			}
		}
		p.AuthPolicies.SubscriptionAuthRoles[r.PathValue("sub")] = merged
		return nil
	})
}

// revokeSubscriptionPermission removes one role from a subscription; a role not granted
// there is a 412, as in Pulsar.
func (s *server) revokeSubscriptionPermission(ctx context.Context, r *http.Request) (any, error) {
	sub, role := r.PathValue("sub"), r.PathValue("role")
	return nil, s.updatePolicies(ctx, r, func(p *resources.Policies) error {
		roles := p.AuthPolicies.SubscriptionAuthRoles[sub]
		i := slices.Index(roles, role)
		if i < 0 {
			return fmt.Errorf("%w: role %s has no permission on subscription %s", ErrNotAllowed, role, sub)
		}
		roles = slices.Delete(roles, i, i+1)
		if len(roles) == 0 {
			delete(p.AuthPolicies.SubscriptionAuthRoles, sub)
		} else {
			p.AuthPolicies.SubscriptionAuthRoles[sub] = roles
		}
		return nil
	})
}

// partitionSuffix matches the "-partition-N" of a partition's local name.
var partitionSuffix = regexp.MustCompile(`-partition-[0-9]+$`)

// topicAuthRef parses the topic in the path without requiring a broker: permissions are
// metadata only.
func (s *server) topicAuthRef(ctx context.Context, r *http.Request) (topicRef, error) {
	t := topicRef{domain: domainOf(r), tenant: r.PathValue("tenant"), ns: r.PathValue("namespace"), local: r.PathValue("topic")}
	if err := s.checkNamespace(ctx, t.tenant, t.ns); err != nil {
		return t, err
	}
	if t.local == "" || len(t.local) > 1024 {
		return t, fmt.Errorf("%w: invalid topic name %q", ErrBadRequest, t.local)
	}
	return t, nil
}

func (s *server) topicPermissions(ctx context.Context, r *http.Request) (any, error) {
	t, err := s.topicAuthRef(ctx, r)
	if err != nil {
		return nil, err
	}
	p, err := s.res.Namespace(ctx, t.tenant, t.ns)
	if err != nil {
		return nil, err
	}
	out := map[string][]string{}
	for role, acts := range p.AuthPolicies.NamespaceAuth {
		out[role] = acts
	}
	names := []string{t.String()}
	if parent := partitionSuffix.ReplaceAllString(t.String(), ""); parent != t.String() {
		names = []string{parent, t.String()}
	}
	for _, name := range names {
		for role, acts := range p.AuthPolicies.DestinationAuth[name] {
			out[role] = acts
		}
	}
	return out, nil
}

func (s *server) grantTopicPermission(ctx context.Context, r *http.Request) (any, error) {
	t, err := s.topicAuthRef(ctx, r)
	if err != nil {
		return nil, err
	}
	actions, err := decodeActions(r)
	if err != nil {
		return nil, err
	}
	return nil, s.res.UpdateNamespace(ctx, t.tenant, t.ns, func(p *resources.Policies) error {
		if p.AuthPolicies.DestinationAuth == nil {
			p.AuthPolicies.DestinationAuth = map[string]map[string][]string{}
		}
		if p.AuthPolicies.DestinationAuth[t.String()] == nil {
			p.AuthPolicies.DestinationAuth[t.String()] = map[string][]string{}
		}
		p.AuthPolicies.DestinationAuth[t.String()][r.PathValue("role")] = actions
		return nil
	})
}

// revokeTopicPermission removes a role's topic-level grant; as in Pulsar, a role with no
// grant on the topic itself (only on its namespace) is a 412.
func (s *server) revokeTopicPermission(ctx context.Context, r *http.Request) (any, error) {
	t, err := s.topicAuthRef(ctx, r)
	if err != nil {
		return nil, err
	}
	role := r.PathValue("role")
	return nil, s.res.UpdateNamespace(ctx, t.tenant, t.ns, func(p *resources.Policies) error {
		roles, ok := p.AuthPolicies.DestinationAuth[t.String()]
		if _, granted := roles[role]; !ok || !granted {
			return fmt.Errorf("%w: permissions are not set at the topic level for role %s", ErrNotAllowed, role)
		}
		delete(roles, role)
		if len(roles) == 0 {
			delete(p.AuthPolicies.DestinationAuth, t.String())
		}
		return nil
	})
}

// decodeActions reads a permission grant body: a list of Pulsar AuthActions.
func decodeActions(r *http.Request) ([]string, error) {
	var actions []string
	if err := decodeBody(r, &actions); err != nil {
		return nil, err
	}
	for _, a := range actions {
		if !slices.Contains(authActions, a) {
			return nil, fmt.Errorf("%w: unknown action %q", ErrBadRequest, a)
		}
	}
	if actions == nil {
		actions = []string{}
	}
	return actions, nil
}

var authActions = []string{"produce", "consume", "functions", "sources", "sinks", "packages"}

// namespaceBundles is GET /admin/v2/namespaces/{t}/{ns}/bundles: the namespace's recorded
// bundle split, or the one full-range bundle of a namespace created without one. In a
// cluster the ownership layer answers this path first (internal/ownership/http.go).
func (s *server) namespaceBundles(ctx context.Context, r *http.Request) (any, error) {
	return s.bundlesOf(ctx, r)
}

func (s *server) bundlesOf(ctx context.Context, r *http.Request) (resources.BundlesData, error) {
	p, err := s.namespacePolicies(ctx, r)
	if err != nil {
		return resources.BundlesData{}, err
	}
	if p.Bundles != nil {
		return *p.Bundles, nil
	}
	return resources.BundlesData{Boundaries: []string{"0x00000000", "0xffffffff"}, NumBundles: 1}, nil
}

// namespaceBounds is the path's tenant/namespace and its bundles' boundaries.
func (s *server) namespaceBounds(ctx context.Context, r *http.Request) (string, []uint32, error) {
	b, err := s.bundlesOf(ctx, r)
	if err != nil {
		return "", nil, err
	}
	bounds, err := resources.ParseBoundaries(b.Boundaries)
	if err != nil {
		return "", nil, err
	}
	return r.PathValue("tenant") + "/" + r.PathValue("namespace"), bounds, nil
}

// topicBundle is GET /lookup/v2/topic/T/bundle (pulsaradmin GetBundleRange): the range of
// the namespace bundle the topic's name hashes into, as plain text.
func (s *server) topicBundle(ctx context.Context, r *http.Request) (any, error) {
	d := r.PathValue("domain")
	if d != "persistent" && d != "non-persistent" {
		return nil, fmt.Errorf("%w: domain must be persistent or non-persistent, got %q", ErrBadRequest, d)
	}
	ns, bounds, err := s.namespaceBounds(ctx, r)
	if err != nil {
		return nil, err
	}
	topic := d + "://" + ns + "/" + r.PathValue("topic")
	return textResponse(resources.FindBundle(ns, bounds, resources.TopicHash(topic)).Range()), nil
}
