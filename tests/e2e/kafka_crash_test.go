package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
	plog "github.com/apache/pulsar-client-go/pulsar/log"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/magnetar-io/magnetar/internal/testenv"
)

// The Kafka protocol of a real `magnetar standalone` process (franz-go). The crash test
// runs in make test; the longer suites (kafka_test.go, kafka_cluster_test.go,
// kafka_sasl_test.go) in make kafka-compat.

// startKafkaStandalone runs a standalone with the Kafka listener on kafkaPort (0: any) and
// returns its Pulsar and Kafka addresses.
func startKafkaStandalone(t *testing.T, dir string, kafkaPort int, extra ...string) (*proc, string, string, string) {
	t.Helper()
	args := append([]string{"--kafka-listeners", fmt.Sprintf("PLAINTEXT://127.0.0.1:%d", kafkaPort), "--functions-worker=false"}, extra...)
	p, broker, httpAddr := startStandalone(t, dir, args...)
	var kafkaAddr string
	for _, line := range strings.Split(p.log(), "\n") {
		var rec map[string]any
		if json.Unmarshal([]byte(line), &rec) == nil && rec["msg"] == "magnetar standalone ready" {
			kafkaAddr = fmt.Sprint(rec["kafka"])
		}
	}
	if kafkaAddr == "" || kafkaAddr == "<nil>" {
		t.Fatalf("no kafka address in the ready line:\n%s", p.log())
	}
	return p, broker, httpAddr, kafkaAddr
}

func kafkaClient(t *testing.T, addr string, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	c, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(addr), kgo.RetryTimeout(90 * time.Second)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

func pulsarClient(t *testing.T, broker string) pulsar.Client {
	t.Helper()
	c, err := pulsar.NewClient(pulsar.ClientOptions{URL: "pulsar://" + broker, OperationTimeout: time.Minute, Logger: plog.DefaultNopLogger()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

func ctxFor(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// consumeKafka polls c until n records arrived (a hang fails at the deadline).
func consumeKafka(t *testing.T, c *kgo.Client, n int) []*kgo.Record {
	t.Helper()
	ctx := ctxFor(t, 2*time.Minute)
	var out []*kgo.Record
	for len(out) < n {
		fs := c.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("consumed %d of %d records", len(out), n)
		}
		fs.EachError(func(topic string, p int32, err error) { t.Logf("fetch %s/%d: %v", topic, p, err) })
		out = append(out, fs.Records()...)
	}
	return out
}

// A standalone SIGKILLed while an idempotent producer with acks=all streams into it, then
// restarted on the same data and port: every acknowledged record is there, none twice.
func TestKafkaSIGKILLKeepsAckedRecords(t *testing.T) {
	dir := t.TempDir()
	port := testenv.FreePort(t)
	p, _, _, kafkaAddr := startKafkaStandalone(t, dir, port)
	ctx := ctxFor(t, 5*time.Minute)
	adm := kadm.NewClient(kafkaClient(t, kafkaAddr))
	if _, err := adm.CreateTopic(ctx, 2, 1, nil, "crash"); err != nil {
		t.Fatal(err)
	}
	prod := kafkaClient(t, kafkaAddr, kgo.DefaultProduceTopic("crash"), kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.RecordDeliveryTimeout(3*time.Minute), kgo.ProducerLinger(2*time.Millisecond))
	const total = 4000
	var mu sync.Mutex
	acked := map[string]bool{}
	failed := 0
	var wg sync.WaitGroup
	killAt := make(chan struct{})
	for i := 0; i < total; i++ {
		if i == total/3 {
			// Kill with about a third acked and more in flight.
			go func() {
				for {
					mu.Lock()
					n := len(acked)
					mu.Unlock()
					if n >= total/4 {
						close(killAt)
						return
					}
					time.Sleep(5 * time.Millisecond)
				}
			}()
		}
		if i == total/2 {
			<-killAt
			p.kill()
			p, _, _, _ = startKafkaStandalone(t, dir, port)
		}
		v := "r" + strconv.Itoa(i)
		wg.Add(1)
		prod.Produce(ctx, &kgo.Record{Key: []byte(v), Value: []byte(v)}, func(r *kgo.Record, err error) {
			defer wg.Done()
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				failed++
				return
			}
			acked[string(r.Value)] = true
		})
	}
	wg.Wait()
	t.Logf("%d acked, %d failed", len(acked), failed)
	if len(acked) < total/2 {
		t.Fatalf("only %d of %d acknowledged", len(acked), total)
	}
	ends, err := adm.ListEndOffsets(ctx, "crash")
	if err != nil {
		t.Fatal(err)
	}
	stored := int64(0)
	ends.Each(func(o kadm.ListedOffset) { stored += o.Offset })
	cons := kafkaClient(t, kafkaAddr, kgo.ConsumeTopics("crash"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	seen := map[string]int{}
	for _, r := range consumeKafka(t, cons, int(stored)) {
		seen[string(r.Value)]++
	}
	for v := range acked {
		if seen[v] == 0 {
			t.Errorf("acknowledged record %s lost", v)
		}
	}
	for v, n := range seen {
		if n > 1 {
			t.Errorf("record %s stored %d times", v, n)
		}
	}
}

func hostPort(host string, port int32) string { return host + ":" + strconv.Itoa(int(port)) }
