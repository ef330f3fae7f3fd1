package auth

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/magnetar-io/magnetar/internal/config"
)

// memPolicies is an in-memory Policies for the decision tests.
type memPolicies struct {
	tenants map[string]TenantPolicy
	ns      map[string]NamespacePolicy
}

func (m memPolicies) Tenant(_ context.Context, t string) (TenantPolicy, error) {
	p, ok := m.tenants[t]
	if !ok {
		return p, fmt.Errorf("%w: %s", ErrPolicyNotFound, t)
	}
	return p, nil
}

func (m memPolicies) Namespace(_ context.Context, t, ns string) (NamespacePolicy, error) {
	p, ok := m.ns[t+"/"+ns]
	if !ok {
		return p, fmt.Errorf("%w: %s/%s", ErrPolicyNotFound, t, ns)
	}
	return p, nil
}

func testAuthorizer(t *testing.T, wildcard bool) *Authorizer {
	t.Helper()
	src := memPolicies{
		tenants: map[string]TenantPolicy{"acme": {AdminRoles: []string{"acme-admin"}}, "other": {AdminRoles: []string{"other-admin"}}},
		ns: map[string]NamespacePolicy{
			"acme/app": {
				NamespaceAuth: map[string][]string{"producer": {"produce"}, "consumer": {"consume"}, "fn": {"functions"}, "team-*": {"consume"}},
				DestinationAuth: map[string]map[string][]string{
					"persistent://acme/app/orders": {"orders-writer": {"produce"}},
				},
				SubscriptionAuthRoles: map[string][]string{"locked": {"consumer2"}},
			},
			"acme/prefixed": {NamespaceAuth: map[string][]string{"consumer": {"consume"}}, SubscriptionAuthMode: "Prefix"},
			"other/ns":      {NamespaceAuth: map[string][]string{"producer": {"produce"}}},
		},
	}
	cfg := config.DefaultAuthorizationConfig()
	cfg.Enabled, cfg.SuperUserRoles, cfg.AllowWildcardsMatching = true, []string{"root"}, wildcard
	a, err := NewAuthorizer(cfg, src, nil)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func TestParseSubscriptionAuthMode(t *testing.T) {
	for in, want := range map[string]string{"Prefix": "Prefix", "prefix": "Prefix", "None": "None", " NONE ": "None", "": "None"} {
		if got, err := ParseSubscriptionAuthMode(in); err != nil || got != want {
			t.Errorf("%q: %q %v, want %q", in, got, err, want)
		}
	}
	for _, in := range []string{"Suffix", "Prefix-", "1"} {
		if got, err := ParseSubscriptionAuthMode(in); err == nil {
			t.Errorf("%q: accepted as %q", in, got)
		}
	}
}

func TestAuthorizerTopics(t *testing.T) {
	a := testAuthorizer(t, false)
	ctx := context.Background()
	orders := Topic{"acme", "app", "persistent://acme/app/orders"}
	other := Topic{"other", "ns", "persistent://other/ns/x"}
	type row struct {
		who   Principal
		topic Topic
		op    TopicOp
		sub   string
		allow bool
	}
	p := func(r string) Principal { return Principal{Role: r} }
	for _, r := range []row{
		{p("root"), orders, TopicAdmin, "", true},
		{p("acme-admin"), orders, TopicAdmin, "", true},
		{p("acme-admin"), orders, TopicProduce, "", true},
		{p("acme-admin"), other, TopicLookup, "", false},
		{p("producer"), orders, TopicProduce, "", true},
		{p("producer"), orders, TopicLookup, "", true},
		{p("producer"), orders, TopicConsume, "s", false},
		{p("producer"), orders, TopicAdmin, "", false},
		{p("consumer"), orders, TopicConsume, "s", true},
		{p("consumer"), orders, TopicLookup, "", true},
		{p("consumer"), orders, TopicProduce, "", false},
		{p("consumer"), orders, TopicAdmin, "", false},
		{p("consumer"), orders, TopicConsume, "locked", false},
		{p("consumer2"), orders, TopicConsume, "locked", false}, // sub allowed, no consume grant
		{p("orders-writer"), orders, TopicProduce, "", true},
		{p("orders-writer"), Topic{"acme", "app", "persistent://acme/app/other"}, TopicProduce, "", false},
		{p("fn"), orders, TopicLookup, "", false},
		{p("team-x"), orders, TopicConsume, "s", false}, // wildcards off
		{p("anonymous"), orders, TopicLookup, "", false},
		{p("producer"), other, TopicProduce, "", true},
		{p("other-admin"), orders, TopicLookup, "", false},
		{p("producer"), Topic{"acme", "missing", "persistent://acme/missing/t"}, TopicProduce, "", false},
		{p("producer"), Topic{"nobody", "ns", "persistent://nobody/ns/t"}, TopicProduce, "", false},
		{p("consumer"), Topic{"acme", "prefixed", "persistent://acme/prefixed/t"}, TopicConsume, "consumer-sub", true},
		{p("consumer"), Topic{"acme", "prefixed", "persistent://acme/prefixed/t"}, TopicConsume, "sub", false},
		{p("consumer"), Topic{"acme", "prefixed", "persistent://acme/prefixed/t"}, TopicConsume, "consumer2-sub", false}, // role "consumer2"'s
		{p("consumer"), Topic{"acme", "prefixed", "persistent://acme/prefixed/t"}, TopicLookup, "", true},
		{p("root"), Topic{"acme", "prefixed", "persistent://acme/prefixed/t"}, TopicConsume, "sub", true},
		{p("acme-admin"), Topic{"acme", "prefixed", "persistent://acme/prefixed/t"}, TopicConsume, "sub", true}, // as Pulsar: tenant admins pass first
		// Through a proxy both roles must be allowed.
		{Principal{Role: "root", Original: "producer"}, orders, TopicProduce, "", true},
		{Principal{Role: "root", Original: "consumer"}, orders, TopicProduce, "", false},
		{Principal{Role: "producer", Original: "root"}, orders, TopicAdmin, "", false},
	} {
		err := a.Topic(ctx, r.who, r.topic, r.op, r.sub)
		if r.allow != (err == nil) {
			t.Errorf("%v %v %s sub=%q: allow=%v, err=%v", r.who, r.op, r.topic.Name, r.sub, r.allow, err)
		}
		if err != nil && !errors.Is(err, ErrAuthorization) {
			t.Errorf("%v: error %v is not ErrAuthorization", r.who, err)
		}
	}
	w := testAuthorizer(t, true)
	if err := w.Topic(ctx, p("team-x"), orders, TopicConsume, "s"); err != nil {
		t.Errorf("wildcard team-*: %v", err)
	}
	if !w.IsSuperUser(p("root")) || w.IsSuperUser(Principal{Role: "root", Original: "x"}) {
		t.Error("superuser through a proxy must be both")
	}
}

func TestAuthorizerNamespacesAndTenants(t *testing.T) {
	a := testAuthorizer(t, false)
	ctx := context.Background()
	p := func(r string) Principal { return Principal{Role: r} }
	for _, r := range []struct {
		who   string
		op    NamespaceOp
		allow bool
	}{
		{"root", NamespaceAdmin, true},
		{"acme-admin", NamespaceAdmin, true},
		{"producer", NamespaceAdmin, false},
		{"producer", NamespaceListTopics, true},
		{"consumer", NamespaceListTopics, true},
		{"consumer", NamespaceConsume, true},
		{"producer", NamespaceConsume, false},
		{"fn", NamespaceFunctions, true},
		{"fn", NamespaceSinks, false},
		{"anonymous", NamespaceListTopics, false},
		{"other-admin", NamespaceAdmin, false},
	} {
		if err := a.Namespace(ctx, p(r.who), "acme", "app", r.op); r.allow != (err == nil) {
			t.Errorf("%s %v: %v", r.who, r.op, err)
		}
	}
	if err := a.Tenant(ctx, p("acme-admin"), "acme", "get"); err != nil {
		t.Error(err)
	}
	if err := a.Tenant(ctx, p("producer"), "acme", "get"); err == nil {
		t.Error("producer read tenant")
	}
	if err := a.SuperUser(p("acme-admin"), "create", "tenant x"); err == nil {
		t.Error("tenant admin created a tenant")
	}
	off, _ := NewAuthorizer(config.DefaultAuthorizationConfig(), nil, nil)
	if err := off.Topic(ctx, p("anyone"), Topic{"a", "b", "c"}, TopicAdmin, ""); err != nil {
		t.Error("disabled authorization denied")
	}
}
