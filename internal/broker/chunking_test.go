package broker

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"

	"github.com/magnetar-io/magnetar/internal/topics"
)

// TestChunkedMessages: messages larger than ChunkMaxMessageSize are split into chunks by
// the client, stored as separate entries, delivered as one message and acknowledged as one
// (the client acknowledges every chunk's id), on Exclusive and Shared subscriptions.
func TestChunkedMessages(t *testing.T) {
	b := startBroker(t, nil)
	client := newClient(t, b.url)
	name, _ := topics.ParseName("persistent://public/default/chunks")
	var cs []pulsar.Consumer
	for _, sc := range []struct {
		sub string
		typ pulsar.SubscriptionType
	}{{"excl", pulsar.Exclusive}, {"shared", pulsar.Shared}} {
		c, err := client.Subscribe(pulsar.ConsumerOptions{Topic: name.String(), SubscriptionName: sc.sub, Type: sc.typ})
		if err != nil {
			t.Fatal(err)
		}
		cs = append(cs, c)
	}
	p, err := client.CreateProducer(pulsar.ProducerOptions{Topic: name.String(), DisableBatching: true,
		EnableChunking: true, ChunkMaxMessageSize: 1000})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	big := make([][]byte, 3)
	for i := range big {
		big[i] = bytes.Repeat([]byte{byte('a' + i)}, 5000+i*1234) // 6..7 chunks each
		if _, err := p.Send(context.Background(), &pulsar.ProducerMessage{Payload: big[i]}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := p.Send(context.Background(), &pulsar.ProducerMessage{Payload: []byte("small")}); err != nil {
		t.Fatal(err)
	}
	st, err := b.s.topics.TopicStats(context.Background(), name)
	if err != nil {
		t.Fatal(err)
	}
	if n := st.Subscriptions["excl"].MsgBacklog; n < 10 {
		t.Fatalf("%d entries stored: the messages were not chunked", n)
	}
	for _, c := range cs {
		got := receive(t, c, 4, true)
		for i, m := range got[:3] {
			if !bytes.Equal(m.Payload(), big[i]) {
				t.Fatalf("%s: message %d is %d bytes, want %d", c.Subscription(), i, len(m.Payload()), len(big[i]))
			}
		}
		if string(got[3].Payload()) != "small" {
			t.Fatalf("%s: last message %q", c.Subscription(), got[3].Payload())
		}
		expectNothing(t, c)
		c.Close() // flushes the acks of every chunk
	}
	for deadline := time.Now().Add(waitFor); ; time.Sleep(20 * time.Millisecond) {
		st, err = b.s.topics.TopicStats(context.Background(), name)
		if err != nil {
			t.Fatal(err)
		}
		if st.Subscriptions["excl"].MsgBacklog == 0 && st.Subscriptions["shared"].MsgBacklog == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("backlog left after acknowledging every message: %+v", st.Subscriptions)
		}
	}
}
