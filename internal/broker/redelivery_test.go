package broker

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"

	"github.com/magnetar-io/magnetar/internal/config"
)

// TestDeadLetterTopic: a message negatively acknowledged again and again comes back with
// a growing redelivery count until the client's DLQ policy moves it to the dead-letter
// topic; the others are unaffected.
func TestDeadLetterTopic(t *testing.T) {
	b := startBroker(t, nil)
	client := newClient(t, b.url)
	topic := "persistent://public/default/dlq-src"
	dlqTopic := "persistent://public/default/dlq-dead"
	dlq, err := client.Subscribe(pulsar.ConsumerOptions{Topic: dlqTopic, SubscriptionName: "d"})
	if err != nil {
		t.Fatal(err)
	}
	defer dlq.Close()
	for _, typ := range []pulsar.SubscriptionType{pulsar.Shared, pulsar.KeyShared} {
		sub := fmt.Sprint("s", typ)
		c, err := client.Subscribe(pulsar.ConsumerOptions{Topic: topic, SubscriptionName: sub, Type: typ,
			NackRedeliveryDelay: 20 * time.Millisecond, SubscriptionInitialPosition: pulsar.SubscriptionPositionEarliest,
			DLQ: &pulsar.DLQPolicy{MaxDeliveries: 3, DeadLetterTopic: dlqTopic}})
		if err != nil {
			t.Fatal(err)
		}
		if typ == pulsar.Shared {
			p, err := client.CreateProducer(pulsar.ProducerOptions{Topic: topic, DisableBatching: true})
			if err != nil {
				t.Fatal(err)
			}
			produce(t, p, "m", 3)
			p.Close()
		}
		// Consume in the background: nack m-1 each time, ack the rest.
		ctx, stop := context.WithCancel(context.Background())
		countsCh := make(chan []uint32, 1)
		go func() {
			var counts []uint32
			for {
				m, err := c.Receive(ctx)
				if err != nil {
					countsCh <- counts
					return
				}
				if string(m.Payload()) == "m-1" {
					counts = append(counts, m.RedeliveryCount())
					c.Nack(m)
				} else {
					_ = c.Ack(m)
				}
			}
		}()
		// m-1 keeps coming back (counts 0, 1, 2) until the policy routes it.
		dead := receive(t, dlq, 1, true)[0]
		if string(dead.Payload()) != "m-1" {
			t.Fatalf("%s: dead letter %q", sub, dead.Payload())
		}
		stop()
		if counts := <-countsCh; fmt.Sprint(counts) != "[0 1 2]" {
			t.Fatalf("%s: redelivery counts %v, want [0 1 2]", sub, counts)
		}
		expectNothing(t, c)
		c.Close()
	}
}

// TestRetryLetterTopic: ReconsumeLater sends the message to the retry-letter topic with a
// delivery delay (the broker's delayed delivery); the consumer gets it back from there with
// its reconsume count, and after MaxDeliveries retries it goes to the dead-letter topic.
func TestRetryLetterTopic(t *testing.T) {
	b := startBroker(t, func(c *config.BrokerConfig) { c.Delivery.DelayedDeliveryTickTimeMillis = 20 })
	client := newClient(t, b.url)
	topic := "persistent://public/default/retry-src"
	dlqTopic := "persistent://public/default/retry-dead"
	dlq, err := client.Subscribe(pulsar.ConsumerOptions{Topic: dlqTopic, SubscriptionName: "d"})
	if err != nil {
		t.Fatal(err)
	}
	defer dlq.Close()
	c, err := client.Subscribe(pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "s", Type: pulsar.Shared,
		RetryEnable: true, DLQ: &pulsar.DLQPolicy{MaxDeliveries: 2, DeadLetterTopic: dlqTopic,
			RetryLetterTopic: "persistent://public/default/retry-again"}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	p, err := client.CreateProducer(pulsar.ProducerOptions{Topic: topic, DisableBatching: true})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	produce(t, p, "r", 1)
	const delay = 300 * time.Millisecond
	var times []string
	var last time.Time
	for i := 0; i < 3; i++ {
		m := receive(t, c, 1, false)[0]
		if i > 0 && time.Since(last) < delay-5*time.Millisecond {
			t.Fatalf("retry %d delivered after %v, before its %v delay", i, time.Since(last), delay)
		}
		if string(m.Payload()) != "r-0" {
			t.Fatalf("got %q", m.Payload())
		}
		times = append(times, m.Properties()["RECONSUMETIMES"])
		last = time.Now()
		c.ReconsumeLater(m, delay)
	}
	if dead := receive(t, dlq, 1, true)[0]; string(dead.Payload()) != "r-0" {
		t.Fatalf("dead letter %q", dead.Payload())
	}
	if fmt.Sprint(times) != "[ 1 2]" {
		t.Fatalf("reconsume times %q", times)
	}
}
