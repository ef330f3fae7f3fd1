package broker

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"

	"github.com/magnetar-io/magnetar/internal/config"
	"github.com/magnetar-io/magnetar/internal/topics"
)

// TestDelayedDeliverySurvivesRestart: Shared and Key_Shared subscriptions hold delayed
// messages until their time, also across a broker restart between produce and consume;
// Exclusive delivers them at once.
func TestDelayedDeliverySurvivesRestart(t *testing.T) {
	r := startRestartable(t, func(c *config.BrokerConfig) { c.Delivery.DelayedDeliveryTickTimeMillis = 50 })
	topic := "persistent://public/default/delayed"
	client := newClient(t, r.url)
	subscribe := func(c pulsar.Client, name string, typ pulsar.SubscriptionType) pulsar.Consumer {
		cons, err := c.Subscribe(pulsar.ConsumerOptions{Topic: topic, SubscriptionName: name, Type: typ,
			SubscriptionInitialPosition: pulsar.SubscriptionPositionEarliest})
		if err != nil {
			t.Fatal(err)
		}
		return cons
	}
	shared := subscribe(client, "shared", pulsar.Shared)
	ks := subscribe(client, "ks", pulsar.KeyShared)
	excl := subscribe(client, "excl", pulsar.Exclusive)
	p, err := client.CreateProducer(pulsar.ProducerOptions{Topic: topic, DisableBatching: true})
	if err != nil {
		t.Fatal(err)
	}
	const delay = 2 * time.Second
	sentAt := time.Now()
	send := func(payload string, after time.Duration) {
		if _, err := p.Send(context.Background(), &pulsar.ProducerMessage{Payload: []byte(payload),
			Key: payload, DeliverAfter: after}); err != nil {
			t.Fatal(err)
		}
	}
	send("now-0", 0)
	for i := 0; i < 3; i++ {
		send(fmt.Sprint("later-", i), delay)
	}
	send("hour", time.Hour)
	send("now-1", 0)
	p.Close()

	if got := payloads(receive(t, excl, 6, true)); len(got) != 6 {
		t.Fatalf("exclusive got %v", got)
	}
	excl.Close()
	for _, c := range []pulsar.Consumer{shared, ks} {
		got := payloads(receive(t, c, 2, true))
		slices.Sort(got)
		if fmt.Sprint(got) != "[now-0 now-1]" {
			t.Fatalf("%s before the delay: %v", c.Subscription(), got)
		}
		c.Close()
	}
	client.Close()

	r.restart()
	client2 := newClient(t, r.url)
	for _, sc := range []struct {
		name string
		typ  pulsar.SubscriptionType
	}{{"shared", pulsar.Shared}, {"ks", pulsar.KeyShared}} {
		c := subscribe(client2, sc.name, sc.typ)
		msgs := receive(t, c, 1, true)
		// deliver_at_time is in whole milliseconds: allow for the client's truncation.
		if now := time.Now(); now.Before(sentAt.Add(delay - 5*time.Millisecond)) {
			t.Fatalf("%s: delayed message delivered %v after sending, before its %v delay", sc.name, now.Sub(sentAt), delay)
		}
		got := payloads(append(msgs, receive(t, c, 2, true)...))
		slices.Sort(got)
		if fmt.Sprint(got) != "[later-0 later-1 later-2]" {
			t.Fatalf("%s after restart: %v", sc.name, got)
		}
		expectNothing(t, c) // "hour" stays held
		name, _ := topics.ParseName(topic)
		if st, err := r.s.topics.TopicStats(context.Background(), name); err != nil || st.Subscriptions[sc.name].MsgDelayed != 1 {
			t.Fatalf("%s: stats %+v, %v; want msgDelayed 1", sc.name, st.Subscriptions[sc.name], err)
		}
		c.Close()
	}
}

// TestDelayedTrackerBound: with room for two delayed messages, the subscription stops
// reading at the third until the first are due, and then delivers everything.
func TestDelayedTrackerBound(t *testing.T) {
	b := startBroker(t, func(c *config.BrokerConfig) {
		c.Delivery.DelayedDeliveryTickTimeMillis = 20
		c.Delivery.DelayedDeliveryMaxTrackedMessages = 2
	})
	topic := "persistent://public/default/delayed-bound"
	client := newClient(t, b.url)
	c, err := client.Subscribe(pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "s", Type: pulsar.Shared})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	p, err := client.CreateProducer(pulsar.ProducerOptions{Topic: topic, DisableBatching: true})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	for i, after := range []time.Duration{300 * time.Millisecond, 300 * time.Millisecond, 300 * time.Millisecond, 0} {
		if _, err := p.Send(context.Background(), &pulsar.ProducerMessage{Payload: []byte(fmt.Sprint("m-", i)), DeliverAfter: after}); err != nil {
			t.Fatal(err)
		}
	}
	got := payloads(receive(t, c, 4, true))
	slices.Sort(got)
	if fmt.Sprint(got) != "[m-0 m-1 m-2 m-3]" {
		t.Fatalf("got %v", got)
	}
	if b.s.cfg.Delivery.DelayedDeliveryMaxTrackedMessages != 2 {
		t.Fatal("config not applied")
	}
}
