package standalone_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
)

// TestDeliveryStateAcrossStackRestart restarts the whole standalone stack (metadata,
// bookie, broker) between produce and consume: batch-index acknowledgements and
// out-of-order acknowledgements survive, and delayed messages are held until their time
// after the restart.
func TestDeliveryStateAcrossStackRestart(t *testing.T) {
	dir := t.TempDir()
	cfg := testConfig(dir)
	cfg.Broker.Delivery.DelayedDeliveryTickTimeMillis = 50
	s := start(t, cfg)
	const topic = "persistent://public/default/delivery-restart"
	subscribe := func(c pulsar.Client) pulsar.Consumer {
		cons, err := c.Subscribe(pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "s", Type: pulsar.Shared,
			EnableBatchIndexAcknowledgment: true, SubscriptionInitialPosition: pulsar.SubscriptionPositionEarliest})
		if err != nil {
			t.Fatal(err)
		}
		return cons
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c := client(t, s)
	cons := subscribe(c)
	batched, err := c.CreateProducer(pulsar.ProducerOptions{Topic: topic, BatchingMaxMessages: 10, BatchingMaxPublishDelay: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 10; i++ {
		batched.SendAsync(ctx, &pulsar.ProducerMessage{Payload: []byte(fmt.Sprint("b-", i))}, func(_ pulsar.MessageID, _ *pulsar.ProducerMessage, err error) {
			if err != nil {
				t.Error(err)
			}
		})
	}
	if err := batched.FlushWithCtx(ctx); err != nil {
		t.Fatal(err)
	}
	batched.Close()
	p, err := c.CreateProducer(pulsar.ProducerOptions{Topic: topic, DisableBatching: true})
	if err != nil {
		t.Fatal(err)
	}
	const delay = 3 * time.Second
	sentAt := time.Now()
	for i, after := range []time.Duration{0, delay, 0, delay} {
		if _, err := p.Send(ctx, &pulsar.ProducerMessage{Payload: []byte(fmt.Sprint("n-", i)), DeliverAfter: after}); err != nil {
			t.Fatal(err)
		}
	}
	p.Close()
	var got []pulsar.Message
	for len(got) < 12 { // the batch and n-0, n-2; n-1 and n-3 are held
		m, err := cons.Receive(ctx)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, m)
	}
	ack := map[string]bool{"b-5": true, "b-1": true, "b-3": true, "n-2": true}
	for _, m := range slices.Backward(got) {
		if ack[string(m.Payload())] {
			if err := cons.Ack(m); err != nil {
				t.Fatal(err)
			}
		} else if string(m.Payload()) == "n-1" || string(m.Payload()) == "n-3" {
			t.Fatalf("delayed %s delivered before the restart", m.Payload())
		}
	}
	cons.Close()
	c.Close()
	if err := s.Close(context.Background()); err != nil {
		t.Fatal(err)
	}

	s = start(t, cfg)
	defer s.Close(context.Background())
	c = client(t, s)
	defer c.Close()
	cons = subscribe(c)
	defer cons.Close()
	var again []string
	for len(again) < 10 {
		m, err := cons.Receive(ctx)
		if err != nil {
			t.Fatalf("after restart, got %v: %v", again, err)
		}
		pl := string(m.Payload())
		if (pl == "n-1" || pl == "n-3") && time.Now().Before(sentAt.Add(delay-5*time.Millisecond)) {
			t.Fatalf("delayed %s delivered %v after sending, before its %v delay", pl, time.Since(sentAt), delay)
		}
		again = append(again, pl)
		_ = cons.Ack(m)
	}
	slices.Sort(again)
	want := []string{"b-0", "b-2", "b-4", "b-6", "b-7", "b-8", "b-9", "n-0", "n-1", "n-3"}
	if fmt.Sprint(again) != fmt.Sprint(want) {
		t.Fatalf("after restart got %v, want %v", again, want)
	}
	rctx, rcancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer rcancel()
	if m, err := cons.Receive(rctx); err == nil {
		t.Fatalf("unexpected %s after restart", m.Payload())
	}
}
