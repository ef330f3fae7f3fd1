//go:build kafkacompat

package testenv

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// TestKafkaStarts starts Apache Kafka from Maven Central and round-trips a record through
// it with franz-go: the helper other suites build on works.
func TestKafkaStarts(t *testing.T) {
	b := StartKafka(t, KafkaOptions{})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr), kgo.AllowAutoTopicCreation(), kgo.ConsumeTopics("t"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "t", Value: []byte("hello")}).FirstErr(); err != nil {
		t.Fatalf("produce: %v\n%s", err, tail(b.Output(), 3000))
	}
	fs := cl.PollFetches(ctx)
	if err := fs.Err0(); err != nil {
		t.Fatal(err)
	}
	if recs := fs.Records(); len(recs) != 1 || string(recs[0].Value) != "hello" {
		t.Fatalf("records %v", recs)
	}
}
