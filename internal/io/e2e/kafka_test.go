//go:build iocompat

package e2e

import (
	"context"
	"fmt"
	"testing"

	"github.com/apache/pulsar-client-go/pulsaradmin/pkg/utils"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/magnetar-io/magnetar/internal/testenv"
)

// TestKafkaSourceAndSink runs Apache Kafka (Maven Central, KRaft) and chains Kafka topic
// "in" -> kafka source -> Pulsar topic -> kafka sink -> Kafka topic "out": every record
// produced to "in" must arrive in "out" with its key and headers, and the source's group
// must commit offsets up to the end of "in" (committed only after the publishes).
func TestKafkaSourceAndSink(t *testing.T) {
	kb := testenv.StartKafka(t, testenv.KafkaOptions{})
	ctx, cancel := context.WithTimeout(context.Background(), hangLimit)
	defer cancel()
	kc, err := kgo.NewClient(kgo.SeedBrokers(kb.Addr))
	if err != nil {
		t.Fatal(err)
	}
	defer kc.Close()
	adm := kadm.NewClient(kc)
	if _, err := adm.CreateTopics(ctx, 3, 1, nil, "in", "out"); err != nil {
		t.Fatal(err)
	}
	const n = 300
	produce := func(from, to int) {
		var recs []*kgo.Record
		for i := from; i < to; i++ {
			recs = append(recs, &kgo.Record{Topic: "in", Key: []byte(fmt.Sprintf("k%d", i)), Value: []byte(fmt.Sprintf("v%d", i)),
				Headers: []kgo.RecordHeader{{Key: "h", Value: []byte(fmt.Sprint(i))}}})
		}
		if err := kc.ProduceSync(ctx, recs...).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	produce(0, n/2)

	a := admin(t)
	topic := "persistent://public/default/from-kafka"
	src := &utils.SourceConfig{Tenant: "public", Namespace: "default", Name: "kafka-in", Archive: "builtin://kafka",
		TopicName: topic, Parallelism: 1, Configs: map[string]any{"bootstrapServers": kb.Addr, "topic": "in",
			"groupId": "magnetar-src", "autoCommitIntervalMs": 500, "copyHeadersEnabled": true}}
	if err := a.Sources().CreateSource(src, src.Archive); err != nil {
		t.Fatal(err)
	}
	sink := &utils.SinkConfig{Tenant: "public", Namespace: "default", Name: "kafka-out", Archive: "builtin://kafka",
		Inputs: []string{topic}, Parallelism: 1, SourceSubscriptionPosition: "Earliest",
		Configs: map[string]any{"bootstrapServers": kb.Addr, "topic": "out", "acks": "all"}}
	if err := a.Sinks().CreateSink(sink, sink.Archive); err != nil {
		t.Fatal(err)
	}
	defer func() {
		_ = a.Sinks().DeleteSink("public", "default", "kafka-out")
		_ = a.Sources().DeleteSource("public", "default", "kafka-in")
	}()
	produce(n/2, n)

	out, err := kgo.NewClient(kgo.SeedBrokers(kb.Addr), kgo.ConsumeTopics("out"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	got := map[string]string{}
	for len(got) < n {
		fs := out.PollFetches(ctx)
		if err := fs.Err0(); err != nil {
			t.Fatalf("reading out after %d records: %v", len(got), err)
		}
		fs.EachRecord(func(r *kgo.Record) {
			h := ""
			for _, x := range r.Headers {
				if x.Key == "h" {
					h = string(x.Value)
				}
			}
			got[string(r.Key)] = string(r.Value) + "/" + h
		})
	}
	for i := 0; i < n; i++ {
		if want := fmt.Sprintf("v%d/%d", i, i); got[fmt.Sprintf("k%d", i)] != want {
			t.Fatalf("out[k%d] = %q, want %q", i, got[fmt.Sprintf("k%d", i)], want)
		}
	}
	eventually(t, "the source's group committed every offset", func() (bool, error) {
		lag, err := adm.Lag(ctx, "magnetar-src")
		if err != nil {
			return false, err
		}
		l := lag["magnetar-src"]
		if l.FetchErr != nil || l.DescribeErr != nil {
			return false, fmt.Errorf("%v %v", l.FetchErr, l.DescribeErr)
		}
		total := l.Lag.Total()
		committed := int64(0)
		for _, ps := range l.Lag {
			for _, p := range ps {
				committed += p.Commit.At
			}
		}
		return committed == n && total == 0, fmt.Errorf("committed %d, lag %d", committed, total)
	})
}
