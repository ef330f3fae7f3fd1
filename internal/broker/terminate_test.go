package broker

import (
	"context"
	"strings"
	"testing"

	"github.com/apache/pulsar-client-go/pulsar"

	"github.com/magnetar-io/magnetar/internal/topics"
)

// TestTerminateWithExclusiveAndWaitingProducers: terminating a topic closes its exclusive
// producer, fails the CreateProducer of a WaitForExclusive producer still queued, refuses
// later producers with TopicTerminated, and leaves consumers to drain what was stored.
func TestTerminateWithExclusiveAndWaitingProducers(t *testing.T) {
	b := startBroker(t, nil)
	client := newClient(t, b.url)
	topic := "persistent://public/default/terminate-waiters"
	c, err := client.Subscribe(pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "s"})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	p1, err := client.CreateProducer(pulsar.ProducerOptions{Topic: topic, DisableBatching: true,
		ProducerAccessMode: pulsar.ProducerAccessModeExclusive})
	if err != nil {
		t.Fatal(err)
	}
	defer p1.Close()
	produce(t, p1, "m", 3)
	waiting := make(chan error, 1)
	go func() {
		p2, err := client.CreateProducer(pulsar.ProducerOptions{Topic: topic, ProducerAccessMode: pulsar.ProducerAccessModeWaitForExclusive})
		if err == nil {
			p2.Close()
		}
		waiting <- err
	}()
	name, _ := topics.ParseName(topic)
	lt := b.s.topics.Loaded(name)
	waitUntil(t, "producer queued", func() bool { return lt.WaitingProducers() == 1 })
	if _, err := b.s.topics.TerminateTopic(context.Background(), name); err != nil {
		t.Fatal(err)
	}
	if err := <-waiting; err == nil || !strings.Contains(err.Error(), "TopicTerminated") {
		t.Fatalf("waiting producer after terminate: %v", err)
	}
	if _, err := p1.Send(context.Background(), &pulsar.ProducerMessage{Payload: []byte("late")}); err == nil {
		t.Fatal("send after terminate succeeded")
	}
	if _, err := client.CreateProducer(pulsar.ProducerOptions{Topic: topic}); err == nil || !strings.Contains(err.Error(), "TopicTerminated") {
		t.Fatalf("producer after terminate: %v", err)
	}
	receive(t, c, 3, true)
	expectNothing(t, c)
}
