package broker

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"

	"github.com/magnetar-io/magnetar/internal/topics"
)

// TestDispatcherReadsEntriesForItsPermits: with batched entries the dispatcher reads about
// permits / messages-per-entry entries, so it does not read what it cannot send and read it
// again after seeking back. 20 entries of 20 messages to a consumer with 40 permits: reading
// as many entries as permits read the rest of the log on every round, about 200 entries.
func TestDispatcherReadsEntriesForItsPermits(t *testing.T) {
	b := startBrokerOn(t, false, nil)
	client := newClient(t, b.url)
	topic := "persistent://public/default/read-size"
	p, err := client.CreateProducer(pulsar.ProducerOptions{Topic: topic, BatchingMaxMessages: 20,
		BatchingMaxPublishDelay: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	c, err := client.Subscribe(pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "s",
		SubscriptionInitialPosition: pulsar.SubscriptionPositionEarliest, ReceiverQueueSize: 40})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	produce(t, p, "m", 400)
	got := receive(t, c, 400, true)
	for i, m := range got {
		if want := fmt.Sprint("m-", i); string(m.Payload()) != want {
			t.Fatalf("message %d is %q, want %q", i, m.Payload(), want)
		}
	}
	name, _ := topics.ParseName(topic)
	ml, err := b.f.Open(context.Background(), name.ManagedLedgerName(), b.f.DefaultConfig()) // the topic's, already open
	if err != nil {
		t.Fatal(err)
	}
	entries, reads := ml.NumberOfEntries(), b.s.topics.Loaded(name).Subscription("s").EntriesRead()
	if entries != 20 {
		t.Fatalf("%d entries stored, want 20 batches of 20", entries)
	}
	// The first read cannot know the batch size yet: up to all 20, then each entry once.
	if reads > 45 {
		t.Fatalf("the dispatcher read %d entries to deliver 20", reads)
	}
}
