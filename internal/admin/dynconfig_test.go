package admin_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
)

// scrape returns the /metrics body of the shared standalone.
func scrape(t *testing.T) string {
	t.Helper()
	resp, err := http.Get("http://" + sa.HTTPAddr() + "/metrics")
	must(t, "scrape", err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	must(t, "read metrics", err)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("/metrics answered %d: %s", resp.StatusCode, b)
	}
	return string(b)
}

// TestDynamicConfiguration drives /admin/v2/brokers/configuration through pulsaradmin:
// the listed keys, a change stored in the metadata store and applied to a live
// subscription at once, the 412 and 400 answers, and a delete back to the start value.
func TestDynamicConfiguration(t *testing.T) {
	a := adminClient(t).Brokers()
	names, err := a.GetDynamicConfigurationNames()
	must(t, "names", err)
	for _, k := range []string{"dispatcherMaxReadBatchSize", "maxUnackedMessagesPerConsumer",
		"maxUnackedMessagesPerSubscription", "exposeTopicLevelMetricsInPrometheus"} {
		if !slices.Contains(names, k) {
			t.Fatalf("dynamic keys %v lack %s", names, k)
		}
	}
	values, err := a.GetAllDynamicConfigurations()
	must(t, "values", err)
	if values["maxUnackedMessagesPerConsumer"] != "50000" {
		t.Fatalf("start value %q, want 50000", values["maxUnackedMessagesPerConsumer"])
	}

	must(t, "update", a.UpdateDynamicConfiguration("maxUnackedMessagesPerConsumer", "3"))
	t.Cleanup(func() { _ = a.DeleteDynamicConfiguration("maxUnackedMessagesPerConsumer") })
	values, err = a.GetAllDynamicConfigurations()
	must(t, "values", err)
	if values["maxUnackedMessagesPerConsumer"] != "3" {
		t.Fatalf("after update %q, want 3", values["maxUnackedMessagesPerConsumer"])
	}
	kv, err := sa.Store().Get(context.Background(), "/admin/configuration")
	must(t, "stored overrides", err)
	var stored map[string]string
	must(t, "decode overrides", json.Unmarshal(kv.Value, &stored))
	if stored["maxUnackedMessagesPerConsumer"] != "3" {
		t.Fatalf("stored overrides %v", stored)
	}

	// Applied live: a consumer that acknowledges nothing gets 3 messages of 6, then the
	// rest once it acknowledges.
	name := "persistent://public/default/dyn-unacked"
	c := pulsarClient(t)
	cons, err := c.Subscribe(pulsar.ConsumerOptions{Topic: name, SubscriptionName: "s", Type: pulsar.Shared})
	must(t, "subscribe", err)
	defer cons.Close()
	produce(t, c, name, 6)
	var got []pulsar.Message
	for range 3 {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		m, err := cons.Receive(ctx)
		cancel()
		must(t, "receive", err)
		got = append(got, m)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	if m, err := cons.Receive(ctx); err == nil {
		t.Fatalf("a 4th message %q arrived past maxUnackedMessagesPerConsumer=3", m.Payload())
	}
	cancel()
	for _, m := range got {
		must(t, "ack", cons.Ack(m))
	}
	for range 3 {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		m, err := cons.Receive(ctx)
		cancel()
		must(t, "receive after acks", err)
		must(t, "ack", cons.Ack(m))
	}

	for key, value := range map[string]string{"maxUnackedMessagesPerConsumer": "-1", "dispatcherMaxReadBatchSize": "0",
		"exposeTopicLevelMetricsInPrometheus": "maybe"} {
		if err := a.UpdateDynamicConfiguration(key, value); err == nil || !strings.Contains(err.Error(), "400") {
			t.Fatalf("%s=%s: %v, want 400", key, value, err)
		}
	}
	if err := a.UpdateDynamicConfiguration("brokerServicePort", "1"); err == nil || !strings.Contains(err.Error(), "412") {
		t.Fatalf("static key: %v, want 412", err)
	}

	must(t, "update another", a.UpdateDynamicConfiguration("dispatcherMaxReadBatchSize", "50"))
	t.Cleanup(func() { _ = a.DeleteDynamicConfiguration("dispatcherMaxReadBatchSize") })
	must(t, "delete", a.DeleteDynamicConfiguration("maxUnackedMessagesPerConsumer"))
	values, err = a.GetAllDynamicConfigurations()
	must(t, "values", err)
	if values["maxUnackedMessagesPerConsumer"] != "50000" || values["dispatcherMaxReadBatchSize"] != "50" {
		t.Fatalf("after deleting one override: %v, want maxUnacked 50000 and the other override kept", values)
	}
}

// TestNamespaceLevelMetrics switches exposeTopicLevelMetricsInPrometheus off at run time:
// the topic series come back summed per namespace without a topic label, then per topic
// again. It also checks the publish latency series.
func TestNamespaceLevelMetrics(t *testing.T) {
	a := adminClient(t).Brokers()
	name := "persistent://public/default/ns-metrics"
	produce(t, pulsarClient(t), name, 5)
	body := scrape(t)
	for _, want := range []string{
		`pulsar_in_messages_total{cluster="standalone",namespace="public/default",topic="` + name + `"} 5`,
		`pulsar_storage_write_latency_count{cluster="standalone",namespace="public/default",topic="` + name + `"} 5`,
		`pulsar_storage_write_latency_le_0_5{cluster="standalone",namespace="public/default",topic="` + name + `"}`,
		`pulsar_storage_write_latency_overflow{`,
		`pulsar_broker_publish_latency_bucket{le="10"}`,
		`pulsar_broker_publish_latency_count `,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}

	must(t, "topic level off", a.UpdateDynamicConfiguration("exposeTopicLevelMetricsInPrometheus", "false"))
	t.Cleanup(func() { _ = a.DeleteDynamicConfiguration("exposeTopicLevelMetricsInPrometheus") })
	body = scrape(t)
	if strings.Contains(body, `topic="`+name+`"`) {
		t.Error("per-topic series exported with exposeTopicLevelMetricsInPrometheus=false")
	}
	for _, want := range []string{
		`pulsar_in_messages_total{cluster="standalone",namespace="public/default"} `,
		`pulsar_storage_write_latency_count{cluster="standalone",namespace="public/default"} `,
		`pulsar_msg_backlog{cluster="standalone",namespace="public/default"} `,
		`pulsar_topics_count{cluster="standalone",namespace="public/default"} `,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("namespace-level /metrics lacks %s", want)
		}
	}

	must(t, "topic level on", a.DeleteDynamicConfiguration("exposeTopicLevelMetricsInPrometheus"))
	if body = scrape(t); !strings.Contains(body, `topic="`+name+`"`) {
		t.Error("per-topic series missing after switching topic level back on")
	}
}
