package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"testing"

	"github.com/apache/pulsar-client-go/pulsar"

	"github.com/magnetar-io/magnetar/internal/ownership"
)

// lmScore is the brokers' score config in TestClusterAssignsNewBundlesToTheLessLoadedBroker:
// 100 msg/s is a full broker, so one busy producer makes its broker clearly the most loaded
// whatever the machine's speed.
var lmScore = ownership.ScoreConfig{MemoryMB: 4096, BandwidthMBps: 125, MsgRate: 100, Band: 10}

// loadReports reads the brokers' load reports through a broker's admin API, by pulsar URL.
func loadReports(httpAddr string) (map[string]ownership.BrokerInfo, error) {
	resp, err := http.Get("http://" + httpAddr + "/admin/v2/broker-load-reports")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var byKey map[string]ownership.BrokerInfo
	if err := json.NewDecoder(resp.Body).Decode(&byKey); err != nil {
		return nil, err
	}
	out := map[string]ownership.BrokerInfo{}
	for _, bi := range byKey {
		out[bi.PulsarServiceURL] = bi
	}
	return out, nil
}

// TestClusterAssignsNewBundlesToTheLessLoadedBroker: one broker serves a topic with a high
// message rate; once its load report shows it, every bundle looked up afterwards (through
// either broker) is assigned by the leader to the other broker.
func TestClusterAssignsNewBundlesToTheLessLoadedBroker(t *testing.T) {
	c := startClusterWith(t, 2, "--load-balancer-msg-rate-capacity", "100",
		"--load-balancer-shedding-enabled=false", "--load-balancer-auto-bundle-split-enabled=false")
	const hotTopic = "persistent://public/default/lm-hot"
	hot := ownerOf(t, c, hotTopic)
	cold := other(c, hot)

	cl := newClient(t, "pulsar://"+hot.Addr)
	prod, err := cl.CreateProducer(pulsar.ProducerOptions{Topic: hotTopic})
	if err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		payload := make([]byte, 100)
		for {
			select {
			case <-stop:
				return
			default:
			}
			prod.SendAsync(context.Background(), &pulsar.ProducerMessage{Payload: payload}, func(pulsar.MessageID, *pulsar.ProducerMessage, error) {})
		}
	}()
	defer func() { close(stop); wg.Wait(); prod.Close() }()

	waitFor(t, "the busy broker's load report", func() (bool, error) {
		r, err := loadReports(cold.HTTP)
		if err != nil {
			return false, err
		}
		h, k := lmScore.Score(r["pulsar://"+hot.Addr].Load), lmScore.Score(r["pulsar://"+cold.Addr].Load)
		return h >= 100 && k < 50, nil
	})
	before := owners(t, cold.HTTP)
	heldByHot := 0
	for _, od := range before {
		if od.NativeURL == "pulsar://"+hot.Addr {
			heldByHot++
		}
	}
	// New topics until every bundle of the namespace is owned: the free ones go to cold.
	for i := range 32 {
		ownerOf(t, c, fmt.Sprintf("persistent://public/default/lm-new-%d", i))
	}
	after := owners(t, cold.HTTP)
	n := 0
	for bundle, od := range after {
		if od.NativeURL == "pulsar://"+hot.Addr {
			n++
			if _, old := before[bundle]; !old {
				t.Errorf("new bundle %s assigned to the busy broker %s", bundle, hot.Name)
			}
		}
	}
	if n != heldByHot || len(after) <= len(before) {
		t.Fatalf("busy broker held %d bundles, now %d; bundles owned before %d, after %d (want new ones on %s)",
			heldByHot, n, len(before), len(after), cold.Name)
	}
}
