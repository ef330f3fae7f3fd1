package broker

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
)

// TestBatchIndexAckAndOutOfOrderAcksSurviveRestart acknowledges single members of a batch
// and non-batched messages out of order, restarts the broker, and checks that exactly the
// unacknowledged messages come back: the partial batch is sent with an ack_set and the
// client skips the members already acknowledged.
func TestBatchIndexAckAndOutOfOrderAcksSurviveRestart(t *testing.T) {
	r := startRestartable(t, nil)
	topic := "persistent://public/default/batchack"
	client := newClient(t, r.url)
	sub := func(c pulsar.Client) pulsar.Consumer {
		cons, err := c.Subscribe(pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "s", Type: pulsar.Shared,
			EnableBatchIndexAcknowledgment: true, SubscriptionInitialPosition: pulsar.SubscriptionPositionEarliest})
		if err != nil {
			t.Fatal(err)
		}
		return cons
	}
	c := sub(client)
	p, err := client.CreateProducer(pulsar.ProducerOptions{Topic: topic, BatchingMaxMessages: 10,
		BatchingMaxPublishDelay: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	produce(t, p, "b", 10) // one batch entry of 10
	p.Close()
	p, err = client.CreateProducer(pulsar.ProducerOptions{Topic: topic, DisableBatching: true})
	if err != nil {
		t.Fatal(err)
	}
	produce(t, p, "n", 6)
	p.Close()

	got := receive(t, c, 16, false)
	ackBatch := map[string]bool{"b-7": true, "b-0": true, "b-4": true, "b-2": true, "b-5": true, "n-4": true, "n-1": true, "n-3": true}
	for _, m := range slices.Backward(got) {
		if ackBatch[string(m.Payload())] {
			if err := c.Ack(m); err != nil {
				t.Fatal(err)
			}
		}
	}
	c.Close() // flushes the grouped acks
	client.Close()

	r.restart()
	client2 := newClient(t, r.url)
	c2 := sub(client2)
	defer c2.Close()
	want := []string{"b-1", "b-3", "b-6", "b-8", "b-9", "n-0", "n-2", "n-5"}
	again := payloads(receive(t, c2, len(want), false))
	slices.Sort(again)
	if fmt.Sprint(again) != fmt.Sprint(want) {
		t.Fatalf("after restart got %v, want %v", again, want)
	}
	expectNothing(t, c2)
}
