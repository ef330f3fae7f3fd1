package broker

import (
	"testing"

	"github.com/apache/pulsar-client-go/pulsar"
)

func TestTopicMetrics(t *testing.T) {
	b := startBroker(t, nil)
	client := newClient(t, b.url)
	topic := "persistent://public/default/metrics"
	c, err := client.Subscribe(pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "s"})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	p, err := client.CreateProducer(pulsar.ProducerOptions{Topic: topic})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	produce(t, p, "m", 25)
	receive(t, c, 25, true)
	mfs, err := b.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	value := func(name string) float64 {
		for _, mf := range mfs {
			if mf.GetName() != name {
				continue
			}
			for _, m := range mf.GetMetric() {
				isTopic := false
				for _, l := range m.GetLabel() {
					isTopic = isTopic || (l.GetName() == "topic" && l.GetValue() == topic)
				}
				if isTopic {
					if m.Counter != nil {
						return m.GetCounter().GetValue()
					}
					return m.GetGauge().GetValue()
				}
			}
		}
		t.Fatalf("no %s series for %s", name, topic)
		return 0
	}
	if v := value("pulsar_in_messages_total"); v != 25 {
		t.Fatalf("pulsar_in_messages_total = %v, want 25", v)
	}
	if v := value("pulsar_out_messages_total"); v != 25 {
		t.Fatalf("pulsar_out_messages_total = %v, want 25", v)
	}
	if v := value("pulsar_producers_count"); v != 1 {
		t.Fatalf("pulsar_producers_count = %v", v)
	}
	if v := value("pulsar_storage_size"); v <= 0 {
		t.Fatalf("pulsar_storage_size = %v", v)
	}
	// The rate gauges exist from the first scrape (zero until a second one measures).
	for _, name := range []string{"pulsar_rate_in", "pulsar_rate_out", "pulsar_throughput_in",
		"pulsar_throughput_out", "pulsar_subscription_msg_rate_out"} {
		if v := value(name); v < 0 {
			t.Fatalf("%s = %v", name, v)
		}
	}
}
