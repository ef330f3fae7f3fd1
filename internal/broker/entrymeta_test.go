package broker

import (
	"fmt"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"

	"github.com/magnetar-io/magnetar/internal/config"
)

// Every stored entry carries broker entry metadata (topics/index.go): the Go client, which
// declares supports_broker_entry_metadata, gets each message's index and broker publish
// time; with exposingBrokerEntryMetadataToClientEnabled off it gets neither, and in both
// cases the messages themselves are intact.
func TestBrokerEntryMetadataToConsumers(t *testing.T) {
	for _, expose := range []bool{true, false} {
		b := startBrokerOn(t, false, func(c *config.BrokerConfig) { c.ExposeBrokerEntryMetadata = expose })
		client := newClient(t, b.url)
		topic := "persistent://public/default/bem"
		cons, err := client.Subscribe(pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "s",
			SubscriptionInitialPosition: pulsar.SubscriptionPositionEarliest})
		if err != nil {
			t.Fatal(err)
		}
		p, err := client.CreateProducer(pulsar.ProducerOptions{Topic: topic, BatchingMaxPublishDelay: 20 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		const n = 30
		produce(t, p, "m", n)
		// Batched: an entry's index is its last message's, so the client's per-message
		// indexes (index - batch size + 1 + batch index) are 0..n-1 in order.
		for i, m := range receive(t, cons, n, true) {
			if want := fmt.Sprintf("m-%d", i); string(m.Payload()) != want {
				t.Fatalf("expose=%v: message %d = %q", expose, i, m.Payload())
			}
			idx, bt := m.Index(), m.BrokerPublishTime()
			if expose && (idx == nil || *idx != uint64(i) || bt == nil || bt.IsZero()) {
				t.Fatalf("message %d: index %v broker time %v", i, idx, bt)
			}
			if !expose && (idx != nil || bt != nil) {
				t.Fatalf("unexposed metadata reached the client: index %v broker time %v", idx, bt)
			}
		}
		p.Close()
		cons.Close()
	}
}
