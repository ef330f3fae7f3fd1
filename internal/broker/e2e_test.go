package broker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
	plog "github.com/apache/pulsar-client-go/pulsar/log"

	"github.com/magnetar-io/magnetar/internal/config"
	"github.com/magnetar-io/magnetar/internal/topics"
	"github.com/magnetar-io/magnetar/internal/wire"
)

// End-to-end tests with the official Go client (v0.19.0) against an in-process broker.

const waitFor = 30 * time.Second

// quietLogger keeps the client's logs out of the test output unless -v.
func quietLogger() plog.Logger {
	if !testing.Verbose() {
		return plog.DefaultNopLogger()
	}
	return plog.NewLoggerWithSlog(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})))
}

func newClient(t *testing.T, url string) pulsar.Client {
	t.Helper()
	c, err := pulsar.NewClient(pulsar.ClientOptions{
		URL: url, OperationTimeout: waitFor, ConnectionTimeout: 5 * time.Second,
		Logger: quietLogger(),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

func produce(t *testing.T, p pulsar.Producer, prefix string, n int) []pulsar.MessageID {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	ids := make([]pulsar.MessageID, n)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var firstErr error
	for i := 0; i < n; i++ {
		wg.Add(1)
		p.SendAsync(ctx, &pulsar.ProducerMessage{Payload: []byte(fmt.Sprintf("%s-%d", prefix, i)), Key: fmt.Sprint("k", i%7)},
			func(id pulsar.MessageID, _ *pulsar.ProducerMessage, err error) {
				mu.Lock()
				if err != nil && firstErr == nil {
					firstErr = err
				}
				mu.Unlock()
				wg.Done()
			})
		_ = i
	}
	if err := p.FlushWithCtx(context.Background()); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	if firstErr != nil {
		t.Fatal(firstErr)
	}
	return ids
}

func receive(t *testing.T, c pulsar.Consumer, n int, ack bool) []pulsar.Message {
	t.Helper()
	var out []pulsar.Message
	for len(out) < n {
		ctx, cancel := context.WithTimeout(context.Background(), waitFor)
		m, err := c.Receive(ctx)
		cancel()
		if err != nil {
			t.Fatalf("received %d of %d: %v", len(out), n, err)
		}
		if ack {
			if err := c.Ack(m); err != nil {
				t.Fatal(err)
			}
		}
		out = append(out, m)
	}
	return out
}

// expectNothing checks that no message arrives within a short grace period.
func expectNothing(t *testing.T, c pulsar.Consumer) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	if m, err := c.Receive(ctx); err == nil {
		t.Fatalf("unexpected message %q", m.Payload())
	}
}

func TestProduceConsumeBatchingAndCompression(t *testing.T) {
	b := startBroker(t, nil)
	client := newClient(t, b.url)
	types := map[string]pulsar.CompressionType{
		"none": pulsar.NoCompression, "lz4": pulsar.LZ4, "zlib": pulsar.ZLib, "zstd": pulsar.ZSTD,
	}
	for name, ct := range types {
		for _, batching := range []bool{true, false} {
			t.Run(fmt.Sprintf("%s/batching=%v", name, batching), func(t *testing.T) {
				topic := fmt.Sprintf("persistent://public/default/pc-%s-%v", name, batching)
				cons, err := client.Subscribe(pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "s",
					SubscriptionInitialPosition: pulsar.SubscriptionPositionEarliest})
				if err != nil {
					t.Fatal(err)
				}
				defer cons.Close()
				p, err := client.CreateProducer(pulsar.ProducerOptions{Topic: topic, CompressionType: ct,
					DisableBatching: !batching, BatchingMaxPublishDelay: 5 * time.Millisecond})
				if err != nil {
					t.Fatal(err)
				}
				defer p.Close()
				const n = 200
				produce(t, p, "m", n)
				msgs := receive(t, cons, n, true)
				for i, m := range msgs {
					if want := fmt.Sprintf("m-%d", i); string(m.Payload()) != want {
						t.Fatalf("message %d = %q, want %q", i, m.Payload(), want)
					}
				}
				expectNothing(t, cons)
			})
		}
	}
}

func TestSharedSubscriptionSplitsMessages(t *testing.T) {
	b := startBroker(t, nil)
	client := newClient(t, b.url)
	topic := "persistent://public/default/shared"
	var cs []pulsar.Consumer
	for i := 0; i < 2; i++ {
		c, err := client.Subscribe(pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "s", Type: pulsar.Shared,
			ReceiverQueueSize: 10})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		cs = append(cs, c)
	}
	p, err := client.CreateProducer(pulsar.ProducerOptions{Topic: topic, DisableBatching: true})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	const n = 100
	produce(t, p, "s", n)
	seen := map[string]int{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for i, c := range cs {
		wg.Add(1)
		go func(i int, c pulsar.Consumer) {
			defer wg.Done()
			for {
				ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
				m, err := c.Receive(ctx)
				cancel()
				if err != nil {
					return
				}
				_ = c.Ack(m)
				mu.Lock()
				seen[string(m.Payload())] = i
				mu.Unlock()
			}
		}(i, c)
	}
	wg.Wait()
	if len(seen) != n {
		t.Fatalf("received %d distinct messages, want %d", len(seen), n)
	}
	per := map[int]int{}
	for _, i := range seen {
		per[i]++
	}
	if per[0] == 0 || per[1] == 0 {
		t.Fatalf("one consumer got nothing: %v", per)
	}
}

func TestExclusiveAndFailover(t *testing.T) {
	b := startBroker(t, nil)
	client := newClient(t, b.url)
	topic := "persistent://public/default/excl"
	c1, err := client.Subscribe(pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "x", Type: pulsar.Exclusive})
	if err != nil {
		t.Fatal(err)
	}
	defer c1.Close()
	if _, err := client.Subscribe(pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "x", Type: pulsar.Exclusive}); err == nil || !strings.Contains(err.Error(), "ConsumerBusy") {
		t.Fatalf("second exclusive consumer: %v, want ConsumerBusy", err)
	}

	ftopic := "persistent://public/default/failover"
	f1, err := client.Subscribe(pulsar.ConsumerOptions{Topic: ftopic, SubscriptionName: "f", Type: pulsar.Failover, Name: "a"})
	if err != nil {
		t.Fatal(err)
	}
	f2, err := client.Subscribe(pulsar.ConsumerOptions{Topic: ftopic, SubscriptionName: "f", Type: pulsar.Failover, Name: "b"})
	if err != nil {
		t.Fatal(err)
	}
	defer f2.Close()
	p, err := client.CreateProducer(pulsar.ProducerOptions{Topic: ftopic})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	produce(t, p, "f", 10)
	got := receive(t, f1, 10, true)
	if string(got[0].Payload()) != "f-0" {
		t.Fatalf("first message %q", got[0].Payload())
	}
	expectNothing(t, f2)
	// The active consumer goes: the standby takes over and gets what follows.
	f1.Close()
	produce(t, p, "g", 5)
	got = receive(t, f2, 5, true)
	if string(got[0].Payload()) != "g-0" {
		t.Fatalf("standby's first message %q, want g-0", got[0].Payload())
	}
}

func TestRedeliveryAfterConsumerClose(t *testing.T) {
	b := startBroker(t, nil)
	client := newClient(t, b.url)
	topic := "persistent://public/default/redeliver"
	c1, err := client.Subscribe(pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "s", Type: pulsar.Shared})
	if err != nil {
		t.Fatal(err)
	}
	p, err := client.CreateProducer(pulsar.ProducerOptions{Topic: topic, DisableBatching: true})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	produce(t, p, "r", 10)
	first := receive(t, c1, 10, false)
	for _, m := range first[:4] {
		if err := c1.Ack(m); err != nil {
			t.Fatal(err)
		}
	}
	c1.Close() // flushes the 4 acks, leaves 6 unacknowledged
	c2, err := client.Subscribe(pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "s", Type: pulsar.Shared})
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	again := receive(t, c2, 6, true)
	for i, m := range again {
		if want := fmt.Sprintf("r-%d", i+4); string(m.Payload()) != want {
			t.Fatalf("redelivered %d = %q, want %q", i, m.Payload(), want)
		}
		if m.RedeliveryCount() < 1 {
			t.Fatalf("redelivered message %q has redelivery count %d", m.Payload(), m.RedeliveryCount())
		}
	}
	expectNothing(t, c2)
}

func TestCumulativeAckWithResponseAndLatest(t *testing.T) {
	b := startBroker(t, nil)
	client := newClient(t, b.url)
	topic := "persistent://public/default/cumulative"
	p, err := client.CreateProducer(pulsar.ProducerOptions{Topic: topic, DisableBatching: true})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	produce(t, p, "old", 3) // before the subscription: a Latest subscription never sees them
	c, err := client.Subscribe(pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "s", AckWithResponse: true})
	if err != nil {
		t.Fatal(err)
	}
	produce(t, p, "c", 10)
	msgs := receive(t, c, 10, false)
	if string(msgs[0].Payload()) != "c-0" {
		t.Fatalf("latest subscription got %q first", msgs[0].Payload())
	}
	if err := c.AckCumulative(msgs[6]); err != nil {
		t.Fatal(err)
	}
	c.Close()
	c, err = client.Subscribe(pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "s"})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	rest := receive(t, c, 3, true)
	if string(rest[0].Payload()) != "c-7" {
		t.Fatalf("after cumulative ack of c-6 got %q", rest[0].Payload())
	}
}

func TestReaders(t *testing.T) {
	b := startBroker(t, nil)
	client := newClient(t, b.url)
	topic := "persistent://public/default/reader"
	p, err := client.CreateProducer(pulsar.ProducerOptions{Topic: topic, DisableBatching: true})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	var ids []pulsar.MessageID
	for i := 0; i < 10; i++ {
		id, err := p.Send(context.Background(), &pulsar.ProducerMessage{Payload: []byte(fmt.Sprint("r-", i))})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	read := func(r pulsar.Reader, n int) []string {
		var out []string
		for i := 0; i < n; i++ {
			ctx, cancel := context.WithTimeout(context.Background(), waitFor)
			m, err := r.Next(ctx)
			cancel()
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, string(m.Payload()))
		}
		return out
	}
	for _, tc := range []struct {
		name      string
		start     pulsar.MessageID
		inclusive bool
		first     string
		n         int
	}{
		{"earliest", pulsar.EarliestMessageID(), false, "r-0", 10},
		{"exclusive", ids[4], false, "r-5", 5},
		{"inclusive", ids[4], true, "r-4", 6},
		{"latest inclusive", pulsar.LatestMessageID(), true, "r-9", 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := client.CreateReader(pulsar.ReaderOptions{Topic: topic, StartMessageID: tc.start, StartMessageIDInclusive: tc.inclusive})
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			got := read(r, tc.n)
			if got[0] != tc.first {
				t.Fatalf("first = %q, want %q", got[0], tc.first)
			}
			if r.HasNext() {
				t.Fatal("HasNext after reading everything")
			}
		})
	}
}

func TestPartitionedTopic(t *testing.T) {
	b := startBroker(t, func(c *config.BrokerConfig) {
		c.AllowAutoTopicCreationType = "partitioned"
		c.DefaultNumPartitions = 3
	})
	client := newClient(t, b.url)
	topic := "persistent://public/default/parts"
	parts, err := client.TopicPartitions(topic)
	if err != nil {
		t.Fatal(err)
	}
	if len(parts) != 3 || !strings.HasSuffix(parts[2], "parts-partition-2") {
		t.Fatalf("partitions %v", parts)
	}
	c, err := client.Subscribe(pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "s", Type: pulsar.Shared})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	p, err := client.CreateProducer(pulsar.ProducerOptions{Topic: topic})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	produce(t, p, "p", 60)
	seen := map[string]bool{}
	partitionsSeen := map[int32]bool{}
	for _, m := range receive(t, c, 60, true) {
		seen[string(m.Payload())] = true
		partitionsSeen[m.ID().PartitionIdx()] = true
	}
	if len(seen) != 60 || len(partitionsSeen) != 3 {
		t.Fatalf("%d distinct messages over partitions %v", len(seen), partitionsSeen)
	}
}

func TestNonPersistentTopic(t *testing.T) {
	b := startBroker(t, nil)
	client := newClient(t, b.url)
	topic := "non-persistent://public/default/np"
	c, err := client.Subscribe(pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "s"})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	p, err := client.CreateProducer(pulsar.ProducerOptions{Topic: topic, DisableBatching: true})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	// The consumer's FLOW may still be on its way: wait for a first message to get through.
	deadline := time.Now().Add(waitFor)
	for {
		if _, err := p.Send(context.Background(), &pulsar.ProducerMessage{Payload: []byte("probe")}); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		_, err := c.Receive(ctx)
		cancel()
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no message on the non-persistent topic")
		}
	}
	produce(t, p, "np", 20)
	got := receive(t, c, 20, true)
	for i, m := range got {
		if want := fmt.Sprint("np-", i); string(m.Payload()) != want {
			t.Fatalf("message %d = %q, want %q", i, m.Payload(), want)
		}
	}
}

func TestProducerBusy(t *testing.T) {
	b := startBroker(t, nil)
	client := newClient(t, b.url)
	topic := "persistent://public/default/busy"
	p, err := client.CreateProducer(pulsar.ProducerOptions{Topic: topic, Name: "only-one"})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	_, err = client.CreateProducer(pulsar.ProducerOptions{Topic: topic, Name: "only-one"})
	if err == nil || !strings.Contains(err.Error(), "ProducerBusy") {
		t.Fatalf("duplicate producer name: %v, want ProducerBusy", err)
	}
	if p.LastSequenceID() != -1 {
		t.Fatalf("last sequence id %d, want -1", p.LastSequenceID())
	}
}

func TestTopicNotFoundWithoutAutoCreation(t *testing.T) {
	b := startBroker(t, func(c *config.BrokerConfig) { c.AllowAutoTopicCreation = false })
	client := newClient(t, b.url)
	_, err := client.CreateProducer(pulsar.ProducerOptions{Topic: "persistent://public/default/missing"})
	if err == nil || !strings.Contains(err.Error(), "TopicNotFound") {
		t.Fatalf("producer on a missing topic: %v, want TopicNotFound", err)
	}
	name, _ := topics.ParseName("persistent://public/default/present")
	if err := b.s.topics.CreateTopic(context.Background(), name, 0); err != nil {
		t.Fatal(err)
	}
	p, err := client.CreateProducer(pulsar.ProducerOptions{Topic: name.String()})
	if err != nil {
		t.Fatal(err)
	}
	p.Close()
}

// TestNoTopicInMissingNamespace checks that auto-creation never creates a topic in a tenant
// or namespace that does not exist, and that the error names the namespace.
func TestNoTopicInMissingNamespace(t *testing.T) {
	b := startBroker(t, nil)
	client := newClient(t, b.url)
	_, err := client.CreateProducer(pulsar.ProducerOptions{Topic: "persistent://nosuch/ns/t"})
	if err == nil || !strings.Contains(err.Error(), "TopicNotFound") || !strings.Contains(err.Error(), "namespace nosuch/ns does not exist") {
		t.Fatalf("producer in a missing namespace: %v", err)
	}
	name, _ := topics.ParseName("persistent://nosuch/ns/t")
	if _, err := b.s.topics.TopicStats(context.Background(), name); !errors.Is(err, wire.ErrTopicNotFound) {
		t.Fatalf("topic recorded in a missing namespace: %v", err)
	}
	p, err := client.CreateProducer(pulsar.ProducerOptions{Topic: "persistent://public/default/ok"})
	if err != nil {
		t.Fatalf("the connection must stay usable: %v", err)
	}
	p.Close()
}

// TestMemStorageTwin runs the dispatch paths on the in-memory metadata store and ledger twin
// (under the real managed ledger), so a regression there is told apart from one in the
// bookies or etcd.
func TestMemStorageTwin(t *testing.T) {
	b := startBrokerOn(t, false, nil)
	client := newClient(t, b.url)
	topic := "persistent://public/default/twin"
	c1, err := client.Subscribe(pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "s", Type: pulsar.Shared})
	if err != nil {
		t.Fatal(err)
	}
	p, err := client.CreateProducer(pulsar.ProducerOptions{Topic: topic})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	produce(t, p, "t", 50)
	receive(t, c1, 50, false)
	c1.Close()
	c2, err := client.Subscribe(pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "s", Type: pulsar.Shared})
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	if got := receive(t, c2, 50, true); string(got[0].Payload()) != "t-0" {
		t.Fatalf("first redelivered %q", got[0].Payload())
	}
}

// TestSlowConsumerDoesNotStallProducer: a consumer that never reads keeps at most its
// permits in flight; the producer's receipts all come back and another subscription still
// gets everything.
func TestSlowConsumerDoesNotStallProducer(t *testing.T) {
	b := startBroker(t, nil)
	client := newClient(t, b.url)
	topic := "persistent://public/default/slow"
	slow, err := client.Subscribe(pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "slow", ReceiverQueueSize: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer slow.Close()
	fast, err := client.Subscribe(pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "fast"})
	if err != nil {
		t.Fatal(err)
	}
	defer fast.Close()
	p, err := client.CreateProducer(pulsar.ProducerOptions{Topic: topic, DisableBatching: true})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	const n = 2000
	produce(t, p, "x", n)
	// All receipts came back although "slow" holds n-1 entries in its backlog.
	got := receive(t, fast, n, true)
	if string(got[n-1].Payload()) != fmt.Sprint("x-", n-1) {
		t.Fatalf("last message %q", got[n-1].Payload())
	}
}

// TestTopicsPatternConsumer exercises GET_TOPICS_OF_NAMESPACE through a regex consumer.
func TestTopicsPatternConsumer(t *testing.T) {
	b := startBroker(t, nil)
	client := newClient(t, b.url)
	for _, name := range []string{"pat-a", "pat-b", "other"} {
		p, err := client.CreateProducer(pulsar.ProducerOptions{Topic: "persistent://public/default/" + name})
		if err != nil {
			t.Fatal(err)
		}
		p.Close()
	}
	list, err := b.s.topics.ListTopics(context.Background(), "public/default", "")
	if err != nil || len(list) != 3 {
		t.Fatalf("ListTopics = %v, %v", list, err)
	}
	c, err := client.Subscribe(pulsar.ConsumerOptions{TopicsPattern: "persistent://public/default/pat-.*",
		SubscriptionName: "s", SubscriptionInitialPosition: pulsar.SubscriptionPositionEarliest})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for _, name := range []string{"pat-a", "pat-b", "other"} {
		p, err := client.CreateProducer(pulsar.ProducerOptions{Topic: "persistent://public/default/" + name, DisableBatching: true})
		if err != nil {
			t.Fatal(err)
		}
		produce(t, p, name, 1)
		p.Close()
	}
	got := map[string]bool{}
	for _, m := range receive(t, c, 2, true) {
		got[string(m.Payload())] = true
	}
	if !got["pat-a-0"] || !got["pat-b-0"] {
		t.Fatalf("pattern consumer got %v", got)
	}
	expectNothing(t, c)
}

func TestProducerAccessModes(t *testing.T) {
	b := startBroker(t, nil)
	client := newClient(t, b.url)
	topic := "persistent://public/default/access"
	p1, err := client.CreateProducer(pulsar.ProducerOptions{Topic: topic, ProducerAccessMode: pulsar.ProducerAccessModeExclusive})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := client.CreateProducer(pulsar.ProducerOptions{Topic: topic}); err == nil || !strings.Contains(err.Error(), "ProducerBusy") {
		t.Fatalf("shared producer next to an exclusive one: %v, want ProducerBusy", err)
	}
	if _, err := client.CreateProducer(pulsar.ProducerOptions{Topic: topic, ProducerAccessMode: pulsar.ProducerAccessModeExclusive}); err == nil || !strings.Contains(err.Error(), "ProducerFenced") {
		t.Fatalf("second exclusive producer: %v, want ProducerFenced", err)
	}
	waiting := make(chan error, 1)
	var p2 pulsar.Producer
	go func() {
		var err error
		p2, err = client.CreateProducer(pulsar.ProducerOptions{Topic: topic, ProducerAccessMode: pulsar.ProducerAccessModeWaitForExclusive})
		waiting <- err
	}()
	select {
	case err := <-waiting:
		t.Fatalf("WaitForExclusive producer created while another holds the topic: %v", err)
	case <-time.After(300 * time.Millisecond):
	}
	p1.Close()
	select {
	case err := <-waiting:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(waitFor):
		t.Fatal("waiting producer never got the topic")
	}
	defer p2.Close()
	if _, err := p2.Send(context.Background(), &pulsar.ProducerMessage{Payload: []byte("mine")}); err != nil {
		t.Fatal(err)
	}
}

func TestNackRedelivery(t *testing.T) {
	b := startBroker(t, nil)
	client := newClient(t, b.url)
	topic := "persistent://public/default/nack"
	for _, typ := range []pulsar.SubscriptionType{pulsar.Shared, pulsar.Exclusive} {
		c, err := client.Subscribe(pulsar.ConsumerOptions{Topic: topic, SubscriptionName: fmt.Sprint("s", typ), Type: typ,
			NackRedeliveryDelay: 50 * time.Millisecond, SubscriptionInitialPosition: pulsar.SubscriptionPositionEarliest})
		if err != nil {
			t.Fatal(err)
		}
		if typ == pulsar.Shared {
			p, err := client.CreateProducer(pulsar.ProducerOptions{Topic: topic, DisableBatching: true})
			if err != nil {
				t.Fatal(err)
			}
			produce(t, p, "n", 3)
			p.Close()
		}
		msgs := receive(t, c, 3, false)
		_ = c.Ack(msgs[0])
		c.Nack(msgs[1])
		_ = c.Ack(msgs[2])
		if typ == pulsar.Shared {
			// Shared redelivers exactly the nacked message.
			again := receive(t, c, 1, true)
			if string(again[0].Payload()) != "n-1" || again[0].RedeliveryCount() != 1 {
				t.Fatalf("shared: redelivered %q count %d", again[0].Payload(), again[0].RedeliveryCount())
			}
			expectNothing(t, c)
		} else {
			// Exclusive rewinds to keep order (as Pulsar does): acks still in the client's
			// grouping window may come back too; n-1 must.
			for {
				m := receive(t, c, 1, true)[0]
				if string(m.Payload()) == "n-1" {
					if m.RedeliveryCount() < 1 {
						t.Fatalf("exclusive: n-1 redelivered with count %d", m.RedeliveryCount())
					}
					break
				}
			}
		}
		c.Close()
	}
}

func TestSeekByTimeAndBatchedReader(t *testing.T) {
	b := startBroker(t, nil)
	client := newClient(t, b.url)
	topic := "persistent://public/default/seektime"
	p, err := client.CreateProducer(pulsar.ProducerOptions{Topic: topic, BatchingMaxPublishDelay: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	produce(t, p, "a", 20)
	produce(t, p, "b", 20)

	// A reader over batched entries: HasNext relies on GET_LAST_MESSAGE_ID's batch index.
	r, err := client.CreateReader(pulsar.ReaderOptions{Topic: topic, StartMessageID: pulsar.EarliestMessageID()})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	n := 0
	for r.HasNext() {
		ctx, cancel := context.WithTimeout(context.Background(), waitFor)
		if _, err := r.Next(ctx); err != nil {
			t.Fatal(err)
		}
		cancel()
		n++
	}
	if n != 40 {
		t.Fatalf("reader saw %d messages, want 40", n)
	}

	// Seek by time on unbatched messages, whose publish times are their send times.
	topic2 := topic + "-unbatched"
	p2, err := client.CreateProducer(pulsar.ProducerOptions{Topic: topic2, DisableBatching: true})
	if err != nil {
		t.Fatal(err)
	}
	defer p2.Close()
	produce(t, p2, "a", 20)
	time.Sleep(50 * time.Millisecond)
	produce(t, p2, "b", 20)
	c, err := client.Subscribe(pulsar.ConsumerOptions{Topic: topic2, SubscriptionName: "s",
		SubscriptionInitialPosition: pulsar.SubscriptionPositionEarliest})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	all := receive(t, c, 40, true)
	if err := c.SeekByTime(all[20].PublishTime()); err != nil {
		t.Fatal(err)
	}
	got := receive(t, c, 20, true)
	if string(got[0].Payload()) != "b-0" {
		t.Fatalf("after seek by time got %q first, want b-0", got[0].Payload())
	}
}

// TestMaxMessageSize: the client learns maxMessageSize from CONNECTED; a message just
// under it goes through, a larger one is refused (by the client, which counts metadata).
func TestMaxMessageSize(t *testing.T) {
	b := startBroker(t, nil) // maxMessageSize 1 MiB
	client := newClient(t, b.url)
	topic := "persistent://public/default/maxsize"
	c, err := client.Subscribe(pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "s"})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	p, err := client.CreateProducer(pulsar.ProducerOptions{Topic: topic, DisableBatching: true})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if _, err := p.Send(context.Background(), &pulsar.ProducerMessage{Payload: make([]byte, 1<<20-1024)}); err != nil {
		t.Fatalf("max-size message: %v", err)
	}
	if _, err := p.Send(context.Background(), &pulsar.ProducerMessage{Payload: make([]byte, 1<<20+1)}); err == nil {
		t.Fatal("message over maxMessageSize was accepted")
	}
	if m := receive(t, c, 1, true); len(m[0].Payload()) != 1<<20-1024 {
		t.Fatalf("received %d bytes", len(m[0].Payload()))
	}
}

// TestUnackedLimitIsForSharedOnly: an Exclusive consumer that never acknowledges keeps
// receiving past maxUnackedMessagesPerConsumer, as in Pulsar, where the limit bounds shared
// subscriptions only.
func TestUnackedLimitIsForSharedOnly(t *testing.T) {
	b := startBroker(t, func(c *config.BrokerConfig) {
		c.MaxUnackedMessagesPerConsumer = 5
		c.MaxUnackedMessagesPerSubscription = 7
	})
	client := newClient(t, b.url)
	topic := "persistent://public/default/unacked-exclusive"
	p, err := client.CreateProducer(pulsar.ProducerOptions{Topic: topic, DisableBatching: true})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	produce(t, p, "x", 30)
	// Subscriptions from the earliest position read the backlog without acknowledging.
	for _, typ := range []pulsar.SubscriptionType{pulsar.Exclusive, pulsar.Failover} {
		c, err := client.Subscribe(pulsar.ConsumerOptions{Topic: topic, SubscriptionName: fmt.Sprint("s", typ), Type: typ,
			SubscriptionInitialPosition: pulsar.SubscriptionPositionEarliest})
		if err != nil {
			t.Fatal(err)
		}
		receive(t, c, 30, false)
		c.Close()
	}
}

// TestUnackedLimit: a Shared consumer that never acknowledges stops receiving at
// maxUnackedMessagesPerConsumer; the rest goes to the consumer that does.
func TestUnackedLimit(t *testing.T) {
	b := startBroker(t, func(c *config.BrokerConfig) { c.MaxUnackedMessagesPerConsumer = 5 })
	client := newClient(t, b.url)
	topic := "persistent://public/default/unacked"
	lazy, err := client.Subscribe(pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "s", Type: pulsar.Shared})
	if err != nil {
		t.Fatal(err)
	}
	defer lazy.Close()
	p, err := client.CreateProducer(pulsar.ProducerOptions{Topic: topic, DisableBatching: true})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	produce(t, p, "u", 30)
	got := receive(t, lazy, 5, false)
	expectNothing(t, lazy)
	busy, err := client.Subscribe(pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "s", Type: pulsar.Shared})
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	receive(t, busy, 25, true)
	// Acknowledging unblocks the lazy one.
	for _, m := range got {
		_ = lazy.Ack(m)
	}
	produce(t, p, "v", 40)
	n := 0
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		m, err := lazy.Receive(ctx)
		cancel()
		if err != nil {
			break
		}
		_ = lazy.Ack(m)
		n++
	}
	if n == 0 {
		t.Fatal("consumer stayed blocked after acknowledging")
	}
}

// TestFailoverSpreadsPartitions: with two Failover consumers on a partitioned topic each
// partition has one active consumer, chosen by partition index over the sorted consumer
// names, so both consumers get partitions.
func TestFailoverSpreadsPartitions(t *testing.T) {
	b := startBroker(t, nil)
	client := newClient(t, b.url)
	name, _ := topics.ParseName("persistent://public/default/fo-parts")
	if err := b.s.topics.CreateTopic(context.Background(), name, 4); err != nil {
		t.Fatal(err)
	}
	var cs []pulsar.Consumer
	for _, n := range []string{"a", "b"} {
		c, err := client.Subscribe(pulsar.ConsumerOptions{Topic: name.String(), SubscriptionName: "f", Type: pulsar.Failover, Name: n})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		cs = append(cs, c)
	}
	p, err := client.CreateProducer(pulsar.ProducerOptions{Topic: name.String(), DisableBatching: true})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	for i := 0; i < 40; i++ {
		if _, err := p.Send(context.Background(), &pulsar.ProducerMessage{Key: fmt.Sprint(i), Payload: []byte("x")}); err != nil {
			t.Fatal(err)
		}
	}
	parts := map[int]map[int32]bool{0: {}, 1: {}}
	total := 0
	for i, c := range cs {
		for {
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			m, err := c.Receive(ctx)
			cancel()
			if err != nil {
				break
			}
			_ = c.Ack(m)
			parts[i][m.ID().PartitionIdx()] = true
			total++
		}
	}
	if total != 40 {
		t.Fatalf("received %d of 40", total)
	}
	if len(parts[0]) == 0 || len(parts[1]) == 0 {
		t.Fatalf("partitions per consumer %v", parts)
	}
	for p := range parts[0] {
		if parts[1][p] {
			t.Fatalf("partition %d delivered to both consumers", p)
		}
	}
}

func TestUnsubscribe(t *testing.T) {
	b := startBroker(t, nil)
	client := newClient(t, b.url)
	topic := "persistent://public/default/unsub"
	c1, err := client.Subscribe(pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "s", Type: pulsar.Shared})
	if err != nil {
		t.Fatal(err)
	}
	c2, err := client.Subscribe(pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "s", Type: pulsar.Shared})
	if err != nil {
		t.Fatal(err)
	}
	if err := c1.Unsubscribe(); err == nil {
		t.Fatal("unsubscribe with another consumer connected succeeded")
	}
	c2.Close()
	p, err := client.CreateProducer(pulsar.ProducerOptions{Topic: topic})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	produce(t, p, "old", 5)
	if err := c1.Unsubscribe(); err != nil {
		t.Fatal(err)
	}
	name, _ := topics.ParseName(topic)
	st, err := b.s.topics.TopicStats(context.Background(), name)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := st.Subscriptions["s"]; ok {
		t.Fatal("subscription still listed after unsubscribe")
	}
	// A new subscription of the same name starts afresh (Latest): the old backlog is gone.
	c3, err := client.Subscribe(pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "s"})
	if err != nil {
		t.Fatal(err)
	}
	defer c3.Close()
	produce(t, p, "new", 1)
	if m := receive(t, c3, 1, true); string(m[0].Payload()) != "new-0" {
		t.Fatalf("after re-subscribing got %q", m[0].Payload())
	}
}
