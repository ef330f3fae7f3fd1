package broker

import (
	"context"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
)

// Benchmarks of the broker alone: the official Go client over loopback TCP against the
// broker on the managed ledger over in-memory ledgers (no bookies, no fsync), so the
// numbers are the protocol and dispatch cost, the ceiling the full stack can reach.
//
//	go test -tags pebblegozstd -run '^$' -bench . -benchtime 200000x ./internal/broker/
//
// With MAGNETAR_BENCH_URL=pulsar://host:6650 the same benchmarks run against that broker
// (e.g. `magnetar standalone`, with bookie and fsync) instead of the in-process one.

// benchURL is the broker to benchmark: MAGNETAR_BENCH_URL, or an in-process one.
func benchURL(b *testing.B) string {
	if u := os.Getenv("MAGNETAR_BENCH_URL"); u != "" {
		return u
	}
	return startBroker(b, nil).url
}

func benchPublish(b *testing.B, size int, batching bool) {
	client, err := pulsar.NewClient(pulsar.ClientOptions{URL: benchURL(b), Logger: quietLogger()})
	if err != nil {
		b.Fatal(err)
	}
	defer client.Close()
	p, err := client.CreateProducer(pulsar.ProducerOptions{Topic: fmt.Sprintf("bench-%d-%v-%d", size, batching, time.Now().UnixNano()),
		DisableBatching: !batching, MaxPendingMessages: 10000, BatchingMaxMessages: 1000})
	if err != nil {
		b.Fatal(err)
	}
	defer p.Close()
	payload := make([]byte, size)
	var wg sync.WaitGroup
	ctx := context.Background()
	b.SetBytes(int64(size))
	b.ResetTimer()
	start := time.Now()
	for i := 0; i < b.N; i++ {
		wg.Add(1)
		p.SendAsync(ctx, &pulsar.ProducerMessage{Payload: payload}, func(_ pulsar.MessageID, _ *pulsar.ProducerMessage, err error) {
			if err != nil {
				b.Error(err)
			}
			wg.Done()
		})
	}
	_ = p.FlushWithCtx(context.Background())
	wg.Wait()
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "msg/s")
}

func BenchmarkPublish100BBatched(b *testing.B)   { benchPublish(b, 100, true) }
func BenchmarkPublish1KiBBatched(b *testing.B)   { benchPublish(b, 1024, true) }
func BenchmarkPublish100BUnbatched(b *testing.B) { benchPublish(b, 100, false) }

// BenchmarkEndToEnd100B publishes and consumes b.N messages (batched) through one
// subscription.
func BenchmarkEndToEnd100B(b *testing.B) {
	client, err := pulsar.NewClient(pulsar.ClientOptions{URL: benchURL(b), Logger: quietLogger()})
	if err != nil {
		b.Fatal(err)
	}
	defer client.Close()
	topic := fmt.Sprint("bench-e2e-", time.Now().UnixNano())
	c, err := client.Subscribe(pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "s"})
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	p, err := client.CreateProducer(pulsar.ProducerOptions{Topic: topic, MaxPendingMessages: 10000})
	if err != nil {
		b.Fatal(err)
	}
	defer p.Close()
	payload := make([]byte, 100)
	b.SetBytes(100)
	b.ResetTimer()
	start := time.Now()
	go func() {
		for i := 0; i < b.N; i++ {
			p.SendAsync(context.Background(), &pulsar.ProducerMessage{Payload: payload}, func(pulsar.MessageID, *pulsar.ProducerMessage, error) {})
		}
		_ = p.FlushWithCtx(context.Background())
	}()
	for i := 0; i < b.N; i++ {
		m, err := c.Receive(context.Background())
		if err != nil {
			b.Fatal(err)
		}
		c.AckID(m.ID())
	}
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "msg/s")
}
