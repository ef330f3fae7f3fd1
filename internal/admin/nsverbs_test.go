package admin_test

import (
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/apache/pulsar-client-go/pulsaradmin/pkg/rest"
	"github.com/apache/pulsar-client-go/pulsaradmin/pkg/utils"

	"github.com/magnetar-io/magnetar/internal/resources"
)

// TestNamespaceBundleVerbs: through pulsaradmin, clear-backlog and unsubscribe on one bundle
// act on that bundle's topics only, their namespace forms on every topic, and a bundle the
// namespace does not have is 404.
func TestNamespaceBundleVerbs(t *testing.T) {
	a := adminClient(t)
	c := pulsarClient(t)
	must(t, "tenant", a.Tenants().Create(utils.TenantData{Name: "nsverbs", AllowedClusters: []string{"standalone"}}))
	must(t, "namespace", a.Namespaces().CreateNsWithNumBundles("nsverbs/ns", 4))
	nsn, err := utils.GetNamespaceName("nsverbs/ns")
	must(t, "ns name", err)
	b, err := a.Namespaces().GetPolicies("nsverbs/ns")
	must(t, "policies", err)
	bounds, err := resources.ParseBoundaries(b.Bundles.Boundaries)
	must(t, "boundaries", err)

	// Two topics in different bundles, each with subscriptions s and u and 3 messages behind.
	var names []string
	var bundles []resources.Bundle
	for i := 0; len(names) < 2; i++ {
		name := fmt.Sprintf("persistent://nsverbs/ns/t%d", i)
		bundle := resources.FindBundle("nsverbs/ns", bounds, resources.TopicHash(name))
		if len(bundles) == 1 && bundles[0] == bundle {
			continue
		}
		names, bundles = append(names, name), append(bundles, bundle)
	}
	for _, name := range names {
		tn := topicName(t, name)
		must(t, "create", a.Topics().Create(*tn, 0))
		must(t, "sub s", a.Subscriptions().Create(*tn, "s", utils.Earliest))
		must(t, "sub u", a.Subscriptions().Create(*tn, "u", utils.Earliest))
		produce(t, c, name, 3)
	}
	backlog := func(name, sub string) int64 {
		t.Helper()
		st, err := a.Topics().GetStats(*topicName(t, name))
		must(t, "stats", err)
		s, ok := st.Subscriptions[sub]
		if !ok {
			return -1
		}
		return s.MsgBacklog
	}
	want := func(step string, w map[string][2]int64) {
		t.Helper()
		for i, name := range names {
			if got := [2]int64{backlog(name, "s"), backlog(name, "u")}; got != w[fmt.Sprint(i)] {
				t.Fatalf("%s: %s backlog (s, u) %v, want %v", step, name, got, w[fmt.Sprint(i)])
			}
		}
	}
	want("produced", map[string][2]int64{"0": {3, 3}, "1": {3, 3}})

	must(t, "bundle clear s", a.Namespaces().ClearNamespaceBundleBacklogForSubscription(*nsn, bundles[0].Range(), "s"))
	want("bundle clear of s", map[string][2]int64{"0": {0, 3}, "1": {3, 3}})
	must(t, "bundle clear", a.Namespaces().ClearNamespaceBundleBacklog(*nsn, bundles[1].Range()))
	want("bundle clear", map[string][2]int64{"0": {0, 3}, "1": {0, 0}})
	must(t, "namespace clear u", a.Namespaces().ClearNamespaceBacklogForSubscription(*nsn, "u"))
	want("namespace clear of u", map[string][2]int64{"0": {0, 0}, "1": {0, 0}})

	must(t, "bundle unsubscribe", a.Namespaces().UnsubscribeNamespaceBundle(*nsn, bundles[1].Range(), "u"))
	for i, wantSubs := range [][]string{{"s", "u"}, {"s"}} {
		subs, err := a.Subscriptions().List(*topicName(t, names[i]))
		must(t, "subs", err)
		slices.Sort(subs)
		if !slices.Equal(subs, wantSubs) {
			t.Fatalf("after bundle unsubscribe: %s has %v, want %v", names[i], subs, wantSubs)
		}
	}

	other := resources.Bundle{Lower: 1, Upper: 2}.Range()
	var re rest.Error
	if err := a.Namespaces().ClearNamespaceBundleBacklog(*nsn, other); !errors.As(err, &re) || re.Code != 404 {
		t.Fatalf("clear-backlog of bundle %s the namespace lacks: %v, want 404", other, err)
	}
	if err := a.Namespaces().UnsubscribeNamespaceBundle(*nsn, other, "s"); !errors.As(err, &re) || re.Code != 404 {
		t.Fatalf("unsubscribe on bundle %s the namespace lacks: %v, want 404", other, err)
	}
}
