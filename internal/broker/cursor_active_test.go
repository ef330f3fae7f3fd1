package broker

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"

	"github.com/magnetar-io/magnetar/internal/topics"
)

// cursorActive reports whether the managed-ledger cursor of subscription sub of topic is
// active for the entry cache; ok is false while the topic or subscription is not loaded.
func cursorActive(t *testing.T, b *testBroker, topic string, pick func(name string) bool) (active, ok bool) {
	t.Helper()
	name, err := topics.ParseName(topic)
	if err != nil {
		t.Fatal(err)
	}
	tp := b.s.topics.Loaded(name)
	if tp == nil {
		return false, false
	}
	var sub *topics.Subscription
	subs, err := b.s.topics.Subscriptions(context.Background(), name)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range subs {
		if pick(n) {
			sub = tp.Subscription(n)
		}
	}
	if sub == nil {
		return false, false
	}
	return sub.CacheActive(), true
}

// waitCursorActive waits (bounded) until the subscription's cursor is in state want.
func waitCursorActive(t *testing.T, b *testBroker, topic string, pick func(string) bool, want bool) {
	t.Helper()
	deadline := time.Now().Add(waitFor)
	for {
		if active, ok := cursorActive(t, b, topic, pick); ok && active == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("cursor of %s never became active=%v", topic, want)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// A subscription's cursor is active while it has a consumer and inactive after the last one
// leaves; messages published meanwhile (not cached) all reach the next consumer. A reader's
// cursor is active while it is open.
func TestSubscriptionCursorActivity(t *testing.T) {
	b := startBroker(t, nil)
	client := newClient(t, b.url)
	topic := "persistent://public/default/active-cursor"
	isSub := func(n string) bool { return n == "sub" }
	subscribe := func() pulsar.Consumer {
		c, err := client.Subscribe(pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "sub"})
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	c := subscribe()
	waitCursorActive(t, b, topic, isSub, true)
	c.Close()
	waitCursorActive(t, b, topic, isSub, false)

	p, err := client.CreateProducer(pulsar.ProducerOptions{Topic: topic, DisableBatching: true})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	produce(t, p, "a", 50)

	c = subscribe()
	defer c.Close()
	waitCursorActive(t, b, topic, isSub, true)
	for i, m := range receive(t, c, 50, true) {
		if want := fmt.Sprintf("a-%d", i); string(m.Payload()) != want {
			t.Fatalf("message %d is %q, want %q", i, m.Payload(), want)
		}
	}

	r, err := client.CreateReader(pulsar.ReaderOptions{Topic: topic, StartMessageID: pulsar.EarliestMessageID()})
	if err != nil {
		t.Fatal(err)
	}
	isReader := func(n string) bool { return n != "sub" }
	waitCursorActive(t, b, topic, isReader, true)
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	if m, err := r.Next(ctx); err != nil || string(m.Payload()) != "a-0" {
		t.Fatalf("reader's first message: %v %v", m, err)
	}
	r.Close()
}
