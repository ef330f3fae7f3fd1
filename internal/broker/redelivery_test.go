package broker

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
	"google.golang.org/protobuf/proto"

	"github.com/magnetar-io/magnetar/internal/config"
	"github.com/magnetar-io/magnetar/internal/wire/pb"
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

// TestRedeliverByIDsOrRewind (raw): REDELIVER_UNACKNOWLEDGED_MESSAGES with ids sends back
// only those on Shared and Key_Shared, with redelivery_count 1; on Failover it rewinds over
// every unacknowledged message, in order.
func TestRedeliverByIDsOrRewind(t *testing.T) {
	b := startBroker(t, nil)
	topic := "persistent://public/default/redeliver-raw"
	client := newClient(t, b.url)
	p, err := client.CreateProducer(pulsar.ProducerOptions{Topic: topic, DisableBatching: true})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	produce(t, p, "m", 3)
	raw := dialRaw(t, b)
	raw.connect()
	for i, typ := range []pb.CommandSubscribe_SubType{pb.CommandSubscribe_Shared, pb.CommandSubscribe_Key_Shared, pb.CommandSubscribe_Failover} {
		id := uint64(i + 1)
		sub := &pb.CommandSubscribe{Topic: proto.String(topic), Subscription: proto.String(typ.String()), SubType: typ.Enum(),
			ConsumerId: proto.Uint64(id), RequestId: proto.Uint64(id), InitialPosition: pb.CommandSubscribe_Earliest.Enum()}
		if typ == pb.CommandSubscribe_Key_Shared {
			sub.KeySharedMeta = &pb.KeySharedMeta{KeySharedMode: pb.KeySharedMode_AUTO_SPLIT.Enum()}
		}
		raw.send(&pb.BaseCommand{Type: pb.BaseCommand_SUBSCRIBE.Enum(), Subscribe: sub})
		raw.expect(pb.BaseCommand_SUCCESS)
		raw.send(&pb.BaseCommand{Type: pb.BaseCommand_FLOW.Enum(), Flow: &pb.CommandFlow{
			ConsumerId: proto.Uint64(id), MessagePermits: proto.Uint32(100)}})
		next := func() *pb.CommandMessage {
			for {
				f, err := raw.next()
				if err != nil {
					t.Fatalf("%s: %v", typ, err)
				}
				if m := f.Cmd.GetMessage(); m != nil {
					return m
				}
			}
		}
		var ids []*pb.MessageIdData
		for j := 0; j < 3; j++ {
			ids = append(ids, next().GetMessageId())
		}
		raw.send(&pb.BaseCommand{Type: pb.BaseCommand_REDELIVER_UNACKNOWLEDGED_MESSAGES.Enum(),
			RedeliverUnacknowledgedMessages: &pb.CommandRedeliverUnacknowledgedMessages{
				ConsumerId: proto.Uint64(id), MessageIds: []*pb.MessageIdData{ids[1]}}})
		want := []uint64{ids[1].GetEntryId()}
		if typ == pb.CommandSubscribe_Failover {
			want = []uint64{ids[0].GetEntryId(), ids[1].GetEntryId(), ids[2].GetEntryId()}
		}
		for _, e := range want {
			m := next()
			if m.GetMessageId().GetEntryId() != e || m.GetRedeliveryCount() != 1 {
				t.Fatalf("%s: redelivered entry %d count %d, want entry %d count 1", typ,
					m.GetMessageId().GetEntryId(), m.GetRedeliveryCount(), e)
			}
		}
		raw.ping() // nothing else was sent before the PONG
	}
}
