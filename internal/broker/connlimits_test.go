package broker

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/apache/pulsar-client-go/pulsar"

	"github.com/magnetar-io/magnetar/internal/config"
)

// maxProducersPerConnection / maxConsumersPerConnection with the Go client over TCP (one
// connection per broker and client): the producer or consumer beyond the limit is refused
// with ProducerBusy / ConsumerBusy; that client's other producers and consumers keep
// working, another client is served as usual, and a slot freed by a close is taken again.
func TestPerConnectionLimitsWithTheGoClient(t *testing.T) {
	b := startBrokerOn(t, false, func(c *config.BrokerConfig) {
		c.MaxProducersPerConnection, c.MaxConsumersPerConnection = 2, 2
	})
	limited, other := newClient(t, b.url), newClient(t, b.url)
	topic := func(i int) string { return fmt.Sprintf("persistent://public/default/connlimit-%d", i) }
	// The Go client names the server's error code in its error (it has no Result for
	// ProducerBusy).
	refused := func(err error, code string) bool { return err != nil && strings.Contains(err.Error(), code) }

	var producers []pulsar.Producer
	for i := range 2 {
		p, err := limited.CreateProducer(pulsar.ProducerOptions{Topic: topic(i)})
		if err != nil {
			t.Fatalf("producer %d: %v", i, err)
		}
		producers = append(producers, p)
	}
	if p, err := limited.CreateProducer(pulsar.ProducerOptions{Topic: topic(2)}); !refused(err, "ProducerBusy") {
		if p != nil {
			p.Close()
		}
		t.Fatalf("third producer on the connection: %v, want ProducerBusy", err)
	}
	consume := func(c pulsar.Client, i int, sub string) (pulsar.Consumer, error) {
		return c.Subscribe(pulsar.ConsumerOptions{Topic: topic(i), SubscriptionName: sub, Type: pulsar.Shared})
	}
	var consumers []pulsar.Consumer
	for i := range 2 {
		cs, err := consume(limited, i, "s")
		if err != nil {
			t.Fatalf("consumer %d: %v", i, err)
		}
		consumers = append(consumers, cs)
	}
	if cs, err := consume(limited, 2, "s"); !refused(err, "ConsumerBusy") {
		if cs != nil {
			cs.Close()
		}
		t.Fatalf("third consumer on the connection: %v, want ConsumerBusy", err)
	}

	// The refused client's producers and consumers are undisturbed.
	for i, p := range producers {
		sendAndReceive(t, p, consumers[i], fmt.Sprint("after-refusal-", i))
	}
	// Another connection has its own count.
	for i := range 2 {
		p, err := other.CreateProducer(pulsar.ProducerOptions{Topic: topic(10 + i)})
		if err != nil {
			t.Fatalf("other client's producer %d: %v", i, err)
		}
		defer p.Close()
	}
	// A close frees the slot.
	producers[0].Close()
	p, err := limited.CreateProducer(pulsar.ProducerOptions{Topic: topic(2)})
	if err != nil {
		t.Fatalf("producer after a close freed a slot: %v", err)
	}
	defer p.Close()
	consumers[0].Close()
	cs, err := consume(limited, 2, "s")
	if err != nil {
		t.Fatalf("consumer after a close freed a slot: %v", err)
	}
	defer cs.Close()
	sendAndReceive(t, p, cs, "reused-slot")
}

// sendAndReceive publishes one message with p and receives it with c.
func sendAndReceive(t *testing.T, p pulsar.Producer, c pulsar.Consumer, payload string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	if _, err := p.Send(ctx, &pulsar.ProducerMessage{Payload: []byte(payload)}); err != nil {
		t.Fatalf("send %s: %v", payload, err)
	}
	m, err := c.Receive(ctx)
	if err != nil {
		t.Fatalf("receive %s: %v", payload, err)
	}
	if string(m.Payload()) != payload {
		t.Fatalf("received %q, want %q", m.Payload(), payload)
	}
	_ = c.Ack(m)
}
