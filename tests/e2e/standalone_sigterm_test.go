package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
)

// TestStandaloneSIGTERMShutsDownCleanly checks that SIGTERM ends the process with status 0
// while a consumer and producer are connected, and that the data is there after a restart.
func TestStandaloneSIGTERMShutsDownCleanly(t *testing.T) {
	dir := t.TempDir()
	const topic = "persistent://public/default/sigterm"
	p, broker, _ := startStandalone(t, dir)
	c, err := pulsar.NewClient(pulsar.ClientOptions{URL: "pulsar://" + broker, OperationTimeout: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	cons, err := c.Subscribe(pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "s", SubscriptionInitialPosition: pulsar.SubscriptionPositionEarliest})
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	prod, err := c.CreateProducer(pulsar.ProducerOptions{Topic: topic})
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for i := 0; i < 50; i++ {
		if _, err := prod.Send(ctx, &pulsar.ProducerMessage{Payload: []byte(fmt.Sprint(i))}); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.stop(ctx); err != nil {
		t.Fatalf("SIGTERM: %v", err)
	}

	_, broker, _ = startStandalone(t, dir)
	c2, err := pulsar.NewClient(pulsar.ClientOptions{URL: "pulsar://" + broker, OperationTimeout: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	cons2, err := c2.Subscribe(pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "s"})
	if err != nil {
		t.Fatal(err)
	}
	defer cons2.Close()
	for i := 0; i < 50; i++ {
		m, err := cons2.Receive(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if string(m.Payload()) != fmt.Sprint(i) {
			t.Fatalf("message %d after restart = %q", i, m.Payload())
		}
		_ = cons2.Ack(m)
	}
}
