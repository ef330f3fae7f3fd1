package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
	pa "github.com/apache/pulsar-client-go/pulsaradmin/pkg/admin"
	paconfig "github.com/apache/pulsar-client-go/pulsaradmin/pkg/admin/config"
	"github.com/apache/pulsar-client-go/pulsaradmin/pkg/utils"
)

// TestBrokerRunsFunctionsWorker: `magnetar broker --functions-worker` (functionsWorkerEnabled)
// runs a functions worker in each broker process: both join one worker cluster, a source
// created through either broker's admin API runs on one of them and publishes, and its status
// is served by both.
func TestBrokerRunsFunctionsWorker(t *testing.T) {
	c := startClusterWith(t, 2, "--functions-worker")
	workers := func(httpAddr string) (int, error) {
		resp, err := http.Get("http://" + httpAddr + "/admin/v2/worker/cluster")
		if err != nil {
			return 0, err
		}
		defer resp.Body.Close()
		var ws []map[string]any
		if resp.StatusCode != http.StatusOK {
			return 0, fmt.Errorf("status %s", resp.Status)
		}
		err = json.NewDecoder(resp.Body).Decode(&ws)
		return len(ws), err
	}
	for _, b := range c.Brokers {
		waitUntil(t, "two workers seen by "+b.Name, func() (bool, error) {
			n, err := workers(b.HTTP)
			return n == 2, err
		})
	}

	admin := func(httpAddr string) pa.Client {
		a, err := pa.New(&paconfig.Config{WebServiceURL: "http://" + httpAddr})
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	topic := "persistent://public/default/broker-fw-gen"
	src := &utils.SourceConfig{Tenant: "public", Namespace: "default", Name: "gen", Archive: "builtin://data-generator",
		TopicName: topic, Parallelism: 1, Configs: map[string]any{"sleepBetweenMessages": 20}}
	// Written through the second broker: the worker there forwards it to the leader.
	waitUntil(t, "the source created", func() (bool, error) {
		err := admin(c.Brokers[1].HTTP).Sources().CreateSource(src, src.Archive)
		return err == nil, err
	})

	cl := newClient(t, c.BrokerServiceURL())
	cons, err := cl.Subscribe(pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "check",
		SubscriptionInitialPosition: pulsar.SubscriptionPositionEarliest})
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	for i := 0; i < 20; i++ {
		m, err := cons.Receive(ctx)
		if err != nil {
			t.Fatalf("message %d: %v", i, err)
		}
		var p struct {
			ID int64 `json:"id"`
		}
		if err := json.Unmarshal(m.Payload(), &p); err != nil {
			t.Fatalf("not a Person: %s", m.Payload())
		}
		_ = cons.Ack(m)
	}
	for _, b := range c.Brokers {
		st, err := admin(b.HTTP).Sources().GetSourceStatus("public", "default", "gen")
		if err != nil || st.NumRunning != 1 {
			t.Fatalf("status through %s: %+v %v", b.Name, st, err)
		}
	}
	if err := admin(c.Brokers[0].HTTP).Sources().DeleteSource("public", "default", "gen"); err != nil {
		t.Fatal(err)
	}
}
