package e2e

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"

	pa "github.com/apache/pulsar-client-go/pulsaradmin/pkg/admin"
	paconfig "github.com/apache/pulsar-client-go/pulsaradmin/pkg/admin/config"
	"github.com/apache/pulsar-client-go/pulsaradmin/pkg/utils"

	"github.com/magnetar-io/magnetar/internal/devcluster"
	"github.com/magnetar-io/magnetar/internal/resources"
)

// TestClusterNamespaceVerbsReachEveryOwner: with one topic owned by each broker, a
// namespace clear-backlog and unsubscribe sent to either broker act on both topics (the
// broker fans them out to every bundle's owner), a per-bundle clear-backlog sent to the
// broker that does not own the bundle is redirected to the one that does, as is
// delete-bundle (the owner releases the bundle), and a forced namespace delete deletes both
// topics on their owners.
func TestClusterNamespaceVerbsReachEveryOwner(t *testing.T) {
	c := startClusterWith(t, 2, "--force-delete-namespace-allowed=true")
	admins := clusterAdmins(t, c)
	a := admins[0]
	const ns = "public/nsverbs"
	bounds := namespaceWithBundles(t, a, ns, 4)
	nsn, _ := utils.GetNamespaceName(ns)

	// Topic i in its own bundle, taken by broker i: an authoritative lookup at a broker takes
	// a bundle nobody owns.
	var topics []string
	var bundles []resources.Bundle
	for i := 0; len(topics) < 2; i++ {
		name := fmt.Sprintf("persistent://%s/t%d", ns, i)
		b := resources.FindBundle(ns, bounds, resources.TopicHash(name))
		if len(bundles) == 1 && bundles[0] == b {
			continue
		}
		topics, bundles = append(topics, name), append(bundles, b)
	}
	for i, name := range topics {
		resp, err := http.Get("http://" + c.Brokers[i].HTTP + "/lookup/v2/topic/" + strings.Replace(name, "://", "/", 1) + "?authoritative=true")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if got := ownerOf(t, c, name); got != c.Brokers[i] {
			t.Fatalf("%s is owned by %s, want %s", name, got.Name, c.Brokers[i].Name)
		}
	}

	cl := newClient(t, "pulsar://"+c.Brokers[0].Addr)
	fill := func() {
		t.Helper()
		for _, name := range topics {
			tn, _ := utils.GetTopicName(name)
			for _, sub := range []string{"s", "u"} {
				if err := a.Subscriptions().Create(*tn, sub, utils.Earliest); err != nil && !strings.Contains(err.Error(), "409") {
					t.Fatalf("subscription %s on %s: %v", sub, name, err)
				}
			}
			produceInputs(t, cl, name, 0, 3)
		}
	}
	backlogs := func(step string, want int64) {
		t.Helper()
		for _, name := range topics {
			tn, _ := utils.GetTopicName(name)
			st, err := a.Topics().GetStats(*tn)
			if err != nil {
				t.Fatalf("%s: stats of %s: %v", step, name, err)
			}
			for _, sub := range []string{"s", "u"} {
				if got := st.Subscriptions[sub].MsgBacklog; got != want {
					t.Fatalf("%s: %s/%s backlog %d, want %d", step, name, sub, got, want)
				}
			}
		}
	}

	fill()
	backlogs("produced", 3)
	if err := a.Namespaces().ClearNamespaceBacklog(*nsn); err != nil {
		t.Fatal(err)
	}
	backlogs("namespace clear-backlog via "+c.Brokers[0].Name, 0)

	fill()
	if err := admins[1].Namespaces().ClearNamespaceBacklogForSubscription(*nsn, "s"); err != nil {
		t.Fatal(err)
	}
	for _, name := range topics {
		tn, _ := utils.GetTopicName(name)
		st, err := a.Topics().GetStats(*tn)
		if err != nil {
			t.Fatal(err)
		}
		if s, u := st.Subscriptions["s"].MsgBacklog, st.Subscriptions["u"].MsgBacklog; s != 0 || u != 3 {
			t.Fatalf("clear-backlog of s via %s: %s backlog s=%d u=%d, want 0 and 3", c.Brokers[1].Name, name, s, u)
		}
	}

	// Per bundle, through the broker that does not own it: 307 to the owner, then cleared.
	far := c.Brokers[0]
	path := "/admin/v2/namespaces/" + ns + "/" + bundles[1].Range() + "/clearBacklog/u"
	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := noRedirect.Post("http://"+far.HTTP+path, "application/json", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusTemporaryRedirect || !strings.HasPrefix(resp.Header.Get("Location"), "http://"+c.Brokers[1].HTTP+"/") {
		t.Fatalf("bundle clear-backlog via %s: %d %s, want 307 to %s", far.Name, resp.StatusCode, resp.Header.Get("Location"), c.Brokers[1].HTTP)
	}
	if err := a.Namespaces().ClearNamespaceBundleBacklogForSubscription(*nsn, bundles[1].Range(), "u"); err != nil {
		t.Fatal(err)
	}
	if got := subBacklog(t, a, topics[1], "u"); got != 0 {
		t.Fatalf("bundle clear-backlog: %s/u backlog %d, want 0", topics[1], got)
	}
	if got := subBacklog(t, a, topics[0], "u"); got != 3 {
		t.Fatalf("bundle clear-backlog of another bundle: %s/u backlog %d, want 3", topics[0], got)
	}

	if err := admins[1].Namespaces().UnsubscribeNamespace(*nsn, "u"); err != nil {
		t.Fatal(err)
	}
	for _, name := range topics {
		tn, _ := utils.GetTopicName(name)
		subs, err := a.Subscriptions().List(*tn)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(subs, []string{"s"}) {
			t.Fatalf("namespace unsubscribe via %s: %s has %v, want [s]", c.Brokers[1].Name, name, subs)
		}
	}

	// delete-bundle through the broker that does not own the bundle: 307 to the owner, which
	// releases it (the bundle's ownership key goes); its topic stays.
	delPath := "/admin/v2/namespaces/" + ns + "/" + bundles[1].Range() + "?force=true"
	req, _ := http.NewRequest(http.MethodDelete, "http://"+far.HTTP+delPath, nil)
	if resp, err = noRedirect.Do(req); err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusTemporaryRedirect || !strings.HasPrefix(resp.Header.Get("Location"), "http://"+c.Brokers[1].HTTP+"/") {
		t.Fatalf("delete-bundle via %s: %d %s, want 307 to %s", far.Name, resp.StatusCode, resp.Header.Get("Location"), c.Brokers[1].HTTP)
	}
	if err := a.Namespaces().DeleteNamespaceBundle(ns, bundles[1].Range()); err == nil || !strings.Contains(err.Error(), "Cannot delete non empty bundle") {
		t.Fatalf("delete-bundle without force of a bundle with a topic: %v, want 409", err)
	}
	req, _ = http.NewRequest(http.MethodDelete, "http://"+far.HTTP+delPath, nil)
	if resp, err = http.DefaultClient.Do(req); err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent {
		t.Fatalf("forced delete-bundle: %d", resp.StatusCode)
	}
	if _, owned := owners(t, c.Brokers[0].HTTP)[bundles[1].String()]; owned {
		t.Fatalf("bundle %s still owned after delete-bundle", bundles[1])
	}

	// Forced delete through broker 1: each topic is deleted on its owner (a broker that
	// destroyed a log another one serves would leave that one serving the old messages).
	req, _ = http.NewRequest(http.MethodDelete, "http://"+c.Brokers[1].HTTP+"/admin/v2/namespaces/"+ns+"?force=true", nil)
	if resp, err = http.DefaultClient.Do(req); err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent {
		t.Fatalf("forced namespace delete: %d", resp.StatusCode)
	}
	if err := a.Namespaces().CreateNamespace(ns); err != nil {
		t.Fatal(err)
	}
	if parts, plain, err := a.Topics().List(*nsn); err != nil || len(parts)+len(plain) != 0 {
		t.Fatalf("topics after the forced delete: %v %v %v, want none", parts, plain, err)
	}
	for _, name := range topics {
		tn, _ := utils.GetTopicName(name)
		if err := a.Topics().Create(*tn, 0); err != nil {
			t.Fatal(err)
		}
		if err := a.Subscriptions().Create(*tn, "s", utils.Earliest); err != nil {
			t.Fatal(err)
		}
		if got := subBacklog(t, a, name, "s"); got != 0 {
			t.Fatalf("%s made again has a backlog of %d from before the delete", name, got)
		}
	}
}

func subBacklog(t *testing.T, a pa.Client, topic, sub string) int64 {
	t.Helper()
	tn, _ := utils.GetTopicName(topic)
	st, err := a.Topics().GetStats(*tn)
	if err != nil {
		t.Fatal(err)
	}
	return st.Subscriptions[sub].MsgBacklog
}

// clusterAdmins is an official admin client for each broker of c.
func clusterAdmins(t *testing.T, c *devcluster.Cluster) []pa.Client {
	t.Helper()
	admins := make([]pa.Client, len(c.Brokers))
	for i, b := range c.Brokers {
		a, err := pa.New(&paconfig.Config{WebServiceURL: "http://" + b.HTTP})
		if err != nil {
			t.Fatal(err)
		}
		admins[i] = a
	}
	return admins
}

// namespaceWithBundles creates ns with n bundles and returns their boundaries.
func namespaceWithBundles(t *testing.T, a pa.Client, ns string, n int) []uint32 {
	t.Helper()
	if err := a.Namespaces().CreateNsWithNumBundles(ns, n); err != nil {
		t.Fatal(err)
	}
	pol, err := a.Namespaces().GetPolicies(ns)
	if err != nil {
		t.Fatal(err)
	}
	bounds, err := resources.ParseBoundaries(pol.Bundles.Boundaries)
	if err != nil {
		t.Fatal(err)
	}
	return bounds
}
