package admin_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"

	"github.com/apache/pulsar-client-go/pulsaradmin/pkg/rest"
	"github.com/apache/pulsar-client-go/pulsaradmin/pkg/utils"

	"github.com/magnetar-io/magnetar/internal/resources"
)

// TestForceDeleteNamespace, on the real standalone (forceDeleteNamespaceAllowed on): a
// namespace with topics is refused without force (409, Pulsar's reason) and deleted with
// them with ?force=true, a consumer connected; a namespace of the same name made again has
// none of the old topics or their messages.
func TestForceDeleteNamespace(t *testing.T) {
	a := adminClient(t)
	c := pulsarClient(t)
	must(t, "tenant", a.Tenants().Create(utils.TenantData{Name: "forcedel", AllowedClusters: []string{"standalone"}}))
	must(t, "namespace", a.Namespaces().CreateNamespace("forcedel/ns"))
	tn, pn := topicName(t, "persistent://forcedel/ns/t"), topicName(t, "persistent://forcedel/ns/p")
	must(t, "topic", a.Topics().Create(*tn, 0))
	must(t, "partitioned", a.Topics().Create(*pn, 2))
	for _, name := range []string{tn.String(), pn.String(), "persistent://forcedel/ns/t2"} {
		produce(t, c, name, 3)
	}
	// A consumer stays connected (a producer's reconnect races in pulsar-client-go v0.19.0's
	// grabCnx under -race).
	live, err := c.Subscribe(pulsar.ConsumerOptions{Topic: tn.String(), SubscriptionName: "live"})
	must(t, "live consumer", err)

	var re rest.Error
	if err := a.Namespaces().DeleteNamespace("forcedel/ns"); !errors.As(err, &re) || re.Code != 409 || re.Reason != "Cannot delete non empty namespace" {
		t.Fatalf("delete without force: %v, want 409 Cannot delete non empty namespace", err)
	}
	code, body := httpDelete(t, "/admin/v2/namespaces/forcedel/ns?force=true")
	if code != 204 {
		t.Fatalf("delete with force: %d %s", code, body)
	}
	live.Close() // its reconnect would create t again once the namespace is back (auto-creation)
	if _, err := a.Namespaces().GetPolicies("forcedel/ns"); !errors.As(err, &re) || re.Code != 404 {
		t.Fatalf("namespace after force delete: %v, want 404", err)
	}
	code, body = httpDelete(t, "/admin/v2/namespaces/forcedel/gone?force=true")
	var reason struct{ Reason string }
	if code != 404 || json.Unmarshal([]byte(body), &reason) != nil || reason.Reason != "Namespace forcedel/gone does not exist." {
		t.Fatalf("force delete of a missing namespace: %d %s", code, body)
	}

	must(t, "namespace again", a.Namespaces().CreateNamespace("forcedel/ns"))
	nsn, err := utils.GetNamespaceName("forcedel/ns")
	must(t, "ns name", err)
	if parts, _, err := a.Topics().List(*nsn); err != nil || len(parts) != 0 {
		t.Fatalf("partitioned topics of the namespace made again: %v %v, want none", parts, err)
	}
	// t2 had no client: made again, it has nothing of before. (t's closed consumer may still
	// be reconnecting to it, so it is left alone.)
	t2 := topicName(t, "persistent://forcedel/ns/t2")
	must(t, "t2 again", a.Topics().Create(*t2, 0))
	must(t, "sub", a.Subscriptions().Create(*t2, "s", utils.Earliest))
	st, err := a.Topics().GetStats(*t2)
	must(t, "stats", err)
	if b := st.Subscriptions["s"].MsgBacklog; b != 0 {
		t.Fatalf("topic made again has a backlog of %d from before the delete", b)
	}
	if code, body := httpDelete(t, "/admin/v2/namespaces/forcedel/ns?force=true"); code != 204 {
		t.Fatalf("cleanup: %d %s", code, body)
	}
	must(t, "cleanup tenant", a.Tenants().Delete("forcedel"))
}

// TestForceDeleteNamespaceRefused: with forceDeleteNamespaceAllowed off (the default),
// ?force=true answers Pulsar's 405 and deletes nothing.
func TestForceDeleteNamespaceRefused(t *testing.T) {
	srv := newServer(t)
	if code, _ := do(t, srv, "PUT", "/admin/v2/tenants/acme", `{"allowedClusters":["standalone"]}`); code != 204 {
		t.Fatalf("tenant: %d", code)
	}
	if code, _ := do(t, srv, "PUT", "/admin/v2/namespaces/acme/ns", ""); code != 204 {
		t.Fatalf("namespace: %d", code)
	}
	code, body := do(t, srv, "DELETE", "/admin/v2/namespaces/acme/ns?force=true", "")
	var reason struct{ Reason string }
	if code != 405 || json.Unmarshal([]byte(body), &reason) != nil || reason.Reason != "Broker doesn't allow forced deletion of namespaces" {
		t.Fatalf("forced delete, not allowed: %d %s", code, body)
	}
	if code, _ := do(t, srv, "GET", "/admin/v2/namespaces/acme/ns", ""); code != 200 {
		t.Fatalf("namespace after a refused forced delete: %d", code)
	}
}

func httpDelete(t *testing.T, path string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodDelete, "http://"+sa.HTTPAddr()+path, nil)
	must(t, path, err)
	resp, err := http.DefaultClient.Do(req)
	must(t, path, err)
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestDeleteBundle: delete-bundle (pulsaradmin DeleteNamespaceBundle) refuses a bundle with
// topics (409, Pulsar's reason), releases an empty one, and with ?force=true releases one
// with topics without deleting them: the topic and its subscription are still there and its
// consumer, unloaded, gets messages again once reconnected.
func TestDeleteBundle(t *testing.T) {
	a := adminClient(t)
	c := pulsarClient(t)
	must(t, "tenant", a.Tenants().Create(utils.TenantData{Name: "delbundle", AllowedClusters: []string{"standalone"}}))
	must(t, "namespace", a.Namespaces().CreateNsWithNumBundles("delbundle/ns", 4))
	pol, err := a.Namespaces().GetPolicies("delbundle/ns")
	must(t, "policies", err)
	bounds, err := resources.ParseBoundaries(pol.Bundles.Boundaries)
	must(t, "boundaries", err)
	const name = "persistent://delbundle/ns/t"
	full := resources.FindBundle("delbundle/ns", bounds, resources.TopicHash(name))
	empty := resources.Bundle{Namespace: "delbundle/ns", Lower: bounds[0], Upper: bounds[1]}
	if empty == full {
		empty = resources.Bundle{Namespace: "delbundle/ns", Lower: bounds[1], Upper: bounds[2]}
	}
	cons, err := c.Subscribe(pulsar.ConsumerOptions{Topic: name, SubscriptionName: "live"})
	must(t, "consumer", err)
	defer cons.Close()

	var re rest.Error
	if err := a.Namespaces().DeleteNamespaceBundle("delbundle/ns", full.Range()); !errors.As(err, &re) || re.Code != 409 || re.Reason != "Cannot delete non empty bundle" {
		t.Fatalf("delete-bundle with a topic: %v, want 409 Cannot delete non empty bundle", err)
	}
	must(t, "delete empty bundle", a.Namespaces().DeleteNamespaceBundle("delbundle/ns", empty.Range()))
	if err := a.Namespaces().DeleteNamespaceBundle("delbundle/ns", resources.Bundle{Lower: 1, Upper: 2}.Range()); !errors.As(err, &re) || re.Code != 404 {
		t.Fatalf("delete-bundle of a bundle the namespace lacks: %v, want 404", err)
	}
	if code, body := httpDelete(t, "/admin/v2/namespaces/delbundle/ns/"+full.Range()+"?force=true"); code != 204 {
		t.Fatalf("forced delete-bundle: %d %s", code, body)
	}
	subs, err := a.Subscriptions().List(*topicName(t, name))
	must(t, "subscriptions after delete-bundle", err)
	if !slices.Equal(subs, []string{"live"}) {
		t.Fatalf("subscriptions after a forced delete-bundle: %v, want [live]", subs)
	}
	produce(t, c, name, 1)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := cons.Receive(ctx); err != nil {
		t.Fatalf("consumer after a forced delete-bundle: %v", err)
	}
}

// TestForceDeleteTenant, on the real standalone: with forceDeleteTenantAllowed off (the
// default) ?force=true answers Pulsar's 405 and deletes nothing; turned on at run time
// (brokers update-dynamic-config, as in Pulsar) it deletes every namespace with its topics
// and then the tenant; and with forceDeleteNamespaceAllowed turned off at run time the
// namespaces' forced deletes answer 405 in turn.
func TestForceDeleteTenant(t *testing.T) {
	a := adminClient(t)
	c := pulsarClient(t)
	must(t, "tenant", a.Tenants().Create(utils.TenantData{Name: "forcetenant", AllowedClusters: []string{"standalone"}}))
	for _, ns := range []string{"forcetenant/a", "forcetenant/b"} {
		must(t, "namespace", a.Namespaces().CreateNamespace(ns))
		produce(t, c, "persistent://"+ns+"/t", 2)
	}
	reasonOf := func(body string) string {
		var r struct{ Reason string }
		_ = json.Unmarshal([]byte(body), &r)
		return r.Reason
	}
	if code, body := httpDelete(t, "/admin/v2/tenants/forcetenant?force=true"); code != 405 || reasonOf(body) != "Broker doesn't allow forced deletion of tenants" {
		t.Fatalf("forced tenant delete, not allowed: %d %s", code, body)
	}
	var re rest.Error
	if err := a.Tenants().Delete("forcetenant"); !errors.As(err, &re) || re.Code != 409 || re.Reason != "The tenant still has active namespaces" {
		t.Fatalf("tenant delete without force: %v, want 409", err)
	}

	must(t, "allow forced tenant deletes", a.Brokers().UpdateDynamicConfiguration("forceDeleteTenantAllowed", "true"))
	t.Cleanup(func() { _ = a.Brokers().DeleteDynamicConfiguration("forceDeleteTenantAllowed") })
	must(t, "forbid forced namespace deletes", a.Brokers().UpdateDynamicConfiguration("forceDeleteNamespaceAllowed", "false"))
	t.Cleanup(func() { _ = a.Brokers().DeleteDynamicConfiguration("forceDeleteNamespaceAllowed") })
	if code, body := httpDelete(t, "/admin/v2/tenants/forcetenant?force=true"); code != 405 || reasonOf(body) != "Broker doesn't allow forced deletion of namespaces" {
		t.Fatalf("forced tenant delete with forced namespace deletes off: %d %s", code, body)
	}
	if got, err := a.Namespaces().GetNamespaces("forcetenant"); err != nil || len(got) != 2 {
		t.Fatalf("namespaces after refused forced deletes: %v %v, want both", got, err)
	}

	must(t, "back to the start value", a.Brokers().DeleteDynamicConfiguration("forceDeleteNamespaceAllowed"))
	if code, body := httpDelete(t, "/admin/v2/tenants/forcetenant?force=true"); code != 204 {
		t.Fatalf("forced tenant delete: %d %s", code, body)
	}
	if _, err := a.Tenants().Get("forcetenant"); !errors.As(err, &re) || re.Code != 404 {
		t.Fatalf("tenant after the forced delete: %v, want 404", err)
	}
	// Made again, its namespaces hold nothing of before.
	must(t, "tenant again", a.Tenants().Create(utils.TenantData{Name: "forcetenant", AllowedClusters: []string{"standalone"}}))
	must(t, "namespace again", a.Namespaces().CreateNamespace("forcetenant/a"))
	nsn, err := utils.GetNamespaceName("forcetenant/a")
	must(t, "ns name", err)
	if parts, plain, err := a.Topics().List(*nsn); err != nil || len(parts)+len(plain) != 0 {
		t.Fatalf("topics of the namespace made again: %v %v %v, want none", parts, plain, err)
	}
	if code, body := httpDelete(t, "/admin/v2/tenants/forcetenant?force=true"); code != 204 {
		t.Fatalf("cleanup: %d %s", code, body)
	}
}
