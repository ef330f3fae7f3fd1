package regression

import (
	"bytes"
	"testing"

	"github.com/apache/pulsar-client-go/pulsar"
)

// A message of maxMessageSize (5 MiB, less the client's metadata allowance) is stored and
// delivered by a default standalone. Found by our Python module's chunking test (5 MiB
// chunks): the in-process bookie took entries of up to a quarter of its 16 MiB write cache,
// so every message over 4 MiB was refused and the add retried forever.
func TestMessageOfMaxMessageSizeIsStored(t *testing.T) {
	c := client(t)
	topic := topicName(t)
	cons, err := c.Subscribe(pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "s"})
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	prod, err := c.CreateProducer(pulsar.ProducerOptions{Topic: topic, DisableBatching: true})
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	body := bytes.Repeat([]byte("0123456789abcdef"), (5<<20-16<<10)/16)
	ctx := longCtx(t)
	if _, err := prod.Send(ctx, &pulsar.ProducerMessage{Payload: body}); err != nil {
		t.Fatalf("send %d bytes: %v", len(body), err)
	}
	m, err := cons.Receive(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(m.Payload(), body) {
		t.Fatalf("got %d bytes back, want %d", len(m.Payload()), len(body))
	}
}
