package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/apache/pulsar-client-go/pulsar"
	"github.com/apache/pulsar-client-go/pulsaradmin/pkg/utils"

	"github.com/magnetar-io/magnetar/internal/devcluster"
	"github.com/magnetar-io/magnetar/internal/resources"
)

// TestClusterPartitionedTopicVerbsReachEveryPartition: with the partitions of a
// partitioned topic owned by both brokers, the subscription verbs on the partitioned topic
// (create, clear-backlog, reset-cursor, expire, delete), its subscription list, stats,
// internal stats, unload and partitioned-terminate act on every partition whichever broker takes the
// request: each partition's owner runs it. Skip and peek are refused on the partitioned topic with
// Pulsar's 405.
func TestClusterPartitionedTopicVerbsReachEveryPartition(t *testing.T) {
	c := startClusterWith(t, 2)
	admins := clusterAdmins(t, c)
	const ns, partitions = "public/partverbs", 6
	bounds := namespaceWithBundles(t, admins[0], ns, 4)
	topic := "persistent://" + ns + "/p"
	tn, _ := utils.GetTopicName(topic)
	if err := admins[0].Topics().Create(*tn, partitions); err != nil {
		t.Fatal(err)
	}

	spreadPartitions(t, c, ns, bounds, topic, partitions)

	cl := newClient(t, "pulsar://"+c.Brokers[0].Addr)
	// backlogs checks the subscription's backlog on every partition through the partitioned
	// stats of broker via, and the total.
	backlogs := func(step string, via int, want int64) {
		t.Helper()
		st, err := admins[via].Topics().GetPartitionedStats(*tn, true)
		if err != nil {
			t.Fatalf("%s: partitioned stats via %s: %v", step, c.Brokers[via].Name, err)
		}
		if len(st.Partitions) != partitions {
			t.Fatalf("%s: partitioned stats via %s list %d partitions, want %d", step, c.Brokers[via].Name, len(st.Partitions), partitions)
		}
		for name, p := range st.Partitions {
			if got := p.Subscriptions["s"].MsgBacklog; got != want {
				t.Fatalf("%s: %s/s backlog %d, want %d", step, name, got, want)
			}
		}
		if got := st.Subscriptions["s"].MsgBacklog; got != partitions*want {
			t.Fatalf("%s: total backlog %d, want %d", step, got, partitions*want)
		}
	}

	if err := admins[0].Subscriptions().Create(*tn, "s", utils.Earliest); err != nil {
		t.Fatal(err)
	}
	for i := range partitions {
		produceInputs(t, cl, fmt.Sprintf("%s-partition-%d", topic, i), 0, 3)
	}
	backlogs("produced", 1, 3)
	for i, b := range c.Brokers {
		var st struct {
			Metadata   struct{ Partitions int }
			Partitions map[string]struct{ NumberOfEntries int64 }
		}
		resp, err := http.Get("http://" + b.HTTP + "/admin/v2/persistent/" + ns + "/p/partitioned-internalStats")
		if err != nil {
			t.Fatal(err)
		}
		err = json.NewDecoder(resp.Body).Decode(&st)
		resp.Body.Close()
		if err != nil || st.Metadata.Partitions != partitions || len(st.Partitions) != partitions {
			t.Fatalf("partitioned internal stats via %s: %+v %v, want %d partitions", c.Brokers[i].Name, st, err, partitions)
		}
		for name, p := range st.Partitions {
			if p.NumberOfEntries == 0 {
				t.Fatalf("partitioned internal stats via %s: %s has no entries", c.Brokers[i].Name, name)
			}
		}
	}
	for i, a := range admins {
		if subs, err := a.Subscriptions().List(*tn); err != nil || !slices.Equal(subs, []string{"s"}) {
			t.Fatalf("subscriptions via %s: %v %v, want [s]", c.Brokers[i].Name, subs, err)
		}
	}

	if err := admins[1].Subscriptions().ClearBacklog(*tn, "s"); err != nil {
		t.Fatal(err)
	}
	backlogs("clear-backlog", 0, 0)
	if err := admins[0].Subscriptions().ResetCursorToTimestamp(*tn, "s", 0); err != nil {
		t.Fatal(err)
	}
	backlogs("reset-cursor to 0", 1, 3)
	if err := admins[1].Subscriptions().ExpireMessages(*tn, "s", 0); err != nil {
		t.Fatal(err)
	}
	backlogs("expire", 0, 0)
	if err := admins[0].Subscriptions().ResetCursorToTimestamp(*tn, "s", 0); err != nil {
		t.Fatal(err)
	}
	if err := admins[0].Subscriptions().ExpireAllMessages(*tn, 0); err != nil {
		t.Fatal(err)
	}
	backlogs("expire all subscriptions", 1, 0)

	// Each names a position in one partition: Pulsar refuses them on the partitioned topic.
	if err := admins[0].Subscriptions().SkipMessages(*tn, "s", 1); err == nil || !strings.Contains(err.Error(), "Skip messages on a partitioned topic is not allowed") {
		t.Fatalf("skip on the partitioned topic: %v, want 405", err)
	}
	if _, err := admins[1].Subscriptions().PeekMessages(*tn, "s", 1); err == nil || !strings.Contains(err.Error(), "Peek messages on a partitioned topic is not allowed") {
		t.Fatalf("peek on the partitioned topic: %v, want 405", err)
	}

	if err := admins[1].Topics().Unload(*tn); err != nil {
		t.Fatal(err)
	}
	if err := admins[1].Subscriptions().Delete(*tn, "s"); err != nil {
		t.Fatal(err)
	}
	for i := range partitions {
		name := fmt.Sprintf("%s-partition-%d", topic, i)
		pn, _ := utils.GetTopicName(name)
		if subs, err := admins[0].Subscriptions().List(*pn); err != nil || len(subs) != 0 {
			t.Fatalf("%s after deleting the subscription: %v %v, want none", name, subs, err)
		}
	}

	// Each broker serves these verbs of the partitioned topic itself (no redirect to the
	// owner of the partitioned name's bundle), as Pulsar's brokers do.
	direct := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	for i, b := range c.Brokers {
		for _, m := range []string{http.MethodPut, http.MethodDelete} {
			req, _ := http.NewRequest(m, fmt.Sprintf("http://%s/admin/v2/persistent/%s/p/subscription/direct-%d", b.HTTP, ns, i), nil)
			resp, err := direct.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusNoContent {
				t.Fatalf("%s subscription via %s: %d, want 204 served there", m, b.Name, resp.StatusCode)
			}
		}
	}

	// partitioned-terminate through either broker terminates every partition at its owner
	// and answers each partition's last message id.
	resp, err := http.Post("http://"+c.Brokers[1].HTTP+"/admin/v2/persistent/"+ns+"/p/terminate/partitions", "application/json", nil)
	if err != nil {
		t.Fatal(err)
	}
	var last map[string]struct{ LedgerID, EntryID int64 }
	err = json.NewDecoder(resp.Body).Decode(&last)
	resp.Body.Close()
	if err != nil || resp.StatusCode != 200 || len(last) != partitions {
		t.Fatalf("partitioned-terminate: %d %v %v, want the %d partitions' last ids", resp.StatusCode, last, err, partitions)
	}
	for i := range partitions {
		name := fmt.Sprintf("%s-partition-%d", topic, i)
		if id, ok := last[fmt.Sprint(i)]; !ok || id.LedgerID <= 0 {
			t.Fatalf("partitioned-terminate: partition %d's id %+v", i, id)
		}
		if p, err := cl.CreateProducer(pulsar.ProducerOptions{Topic: name}); err == nil {
			p.Close()
			t.Fatalf("%s: a producer after partitioned-terminate", name)
		} else if !strings.Contains(err.Error(), "erminated") {
			t.Fatalf("%s: producer after partitioned-terminate: %v, want TopicTerminated", name, err)
		}
	}
}

// spreadPartitions gives the bundles of topic's partitions to the brokers in turn (an
// authoritative lookup at a broker takes a bundle nobody owns) and checks that both brokers
// own some.
func spreadPartitions(t *testing.T, c *devcluster.Cluster, ns string, bounds []uint32, topic string, partitions int) {
	t.Helper()
	taker := map[resources.Bundle]int{}
	for i := range partitions {
		name := fmt.Sprintf("%s-partition-%d", topic, i)
		b := resources.FindBundle(ns, bounds, resources.TopicHash(name))
		if _, seen := taker[b]; !seen {
			taker[b] = len(taker) % len(c.Brokers)
		}
		resp, err := http.Get("http://" + c.Brokers[taker[b]].HTTP + "/lookup/v2/topic/" + strings.Replace(name, "://", "/", 1) + "?authoritative=true")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	served := map[string]int{}
	for i := range partitions {
		served[ownerOf(t, c, fmt.Sprintf("%s-partition-%d", topic, i)).Name]++
	}
	if len(served) != len(c.Brokers) {
		t.Fatalf("partitions by owner %v: want partitions on both brokers", served)
	}
}
