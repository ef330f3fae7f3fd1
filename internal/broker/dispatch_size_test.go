package broker

import (
	"fmt"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
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
	b.mem.mu.Lock()
	if len(b.mem.logs) != 1 {
		t.Fatalf("%d logs, want the topic's only", len(b.mem.logs))
	}
	var l *memLog
	for _, l = range b.mem.logs {
	}
	b.mem.mu.Unlock()
	l.mu.Lock()
	entries, reads := len(l.entries), l.cursors["s"].reads
	l.mu.Unlock()
	if entries != 20 {
		t.Fatalf("%d entries stored, want 20 batches of 20", entries)
	}
	// The first read cannot know the batch size yet: up to all 20, then each entry once.
	if reads > 45 {
		t.Fatalf("the dispatcher read %d entries to deliver 20", reads)
	}
}
