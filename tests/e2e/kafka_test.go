//go:build kafkacompat

package e2e

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/magnetar-io/magnetar/internal/testenv"
)

// The Kafka protocol served by a real `magnetar standalone` process, with franz-go and the
// official Pulsar Go client on the same topics.

func TestKafkaOnStandalone(t *testing.T) {
	dir := t.TempDir()
	p, broker, httpAddr, kafkaAddr := startKafkaStandalone(t, dir, 0)
	ctx := ctxFor(t, 4*time.Minute)
	adm := kadm.NewClient(kafkaClient(t, kafkaAddr))

	// kafka-topics --create: a partitioned topic of public/default, Metadata naming this
	// broker as the leader of each partition.
	if _, err := adm.CreateTopic(ctx, 3, 1, nil, "kt"); err != nil {
		t.Fatal(err)
	}
	md, err := adm.Metadata(ctx, "kt")
	if err != nil {
		t.Fatal(err)
	}
	td := md.Topics["kt"]
	if td.Err != nil || len(td.Partitions) != 3 || len(md.Brokers) != 1 {
		t.Fatalf("metadata %+v", md)
	}
	if b := md.Brokers[0]; hostPort(b.Host, b.Port) != kafkaAddr {
		t.Fatalf("broker %s:%d, want %s", b.Host, b.Port, kafkaAddr)
	}
	for _, pd := range td.Partitions {
		if pd.Leader != md.Brokers[0].NodeID {
			t.Fatalf("partition %d led by %d", pd.Partition, pd.Leader)
		}
	}
	resp, err := http.Get("http://" + httpAddr + "/admin/v2/persistent/public/default/kt/partitions")
	if err != nil {
		t.Fatal(err)
	}
	var pm struct{ Partitions int }
	_ = json.NewDecoder(resp.Body).Decode(&pm)
	resp.Body.Close()
	if pm.Partitions != 3 {
		t.Fatalf("pulsar sees %d partitions", pm.Partitions)
	}

	// A Kafka producer (idempotent, acks=all) -> a Pulsar consumer.
	pc := pulsarClient(t, broker)
	cons, err := pc.Subscribe(pulsar.ConsumerOptions{Topic: "persistent://public/default/kt", SubscriptionName: "pulsar-sub",
		SubscriptionInitialPosition: pulsar.SubscriptionPositionEarliest})
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	prod := kafkaClient(t, kafkaAddr, kgo.DefaultProduceTopic("kt"))
	const n = 90
	eventTime := time.UnixMilli(1_700_000_000_000)
	perPart := map[int32][]int64{}
	for i := 0; i < n; i++ {
		r := &kgo.Record{Key: []byte("k" + strconv.Itoa(i)), Value: []byte("v" + strconv.Itoa(i)), Timestamp: eventTime,
			Headers: []kgo.RecordHeader{{Key: "h", Value: []byte(strconv.Itoa(i))}}}
		res := prod.ProduceSync(ctx, r)
		if err := res.FirstErr(); err != nil {
			t.Fatal(err)
		}
		rec := res[0].Record
		perPart[rec.Partition] = append(perPart[rec.Partition], rec.Offset)
	}
	for part, offs := range perPart {
		for i, o := range offs {
			if o != int64(i) {
				t.Fatalf("partition %d offsets %v: not contiguous from 0", part, offs)
			}
		}
	}
	seen := map[string]bool{}
	for len(seen) < n {
		rctx, cancel := context.WithTimeout(ctx, time.Minute)
		m, err := cons.Receive(rctx)
		cancel()
		if err != nil {
			t.Fatalf("pulsar received %d of %d: %v", len(seen), n, err)
		}
		i := strings.TrimPrefix(string(m.Payload()), "v")
		if m.Key() != "k"+i || m.Properties()["h"] != i || !m.EventTime().Equal(eventTime) {
			t.Fatalf("pulsar got key %q props %v event time %v for %q", m.Key(), m.Properties(), m.EventTime(), m.Payload())
		}
		seen[string(m.Payload())] = true
		_ = cons.Ack(m)
	}

	// A Pulsar producer -> a Kafka consumer group, which sees both producers' messages.
	pp, err := pc.CreateProducer(pulsar.ProducerOptions{Topic: "persistent://public/default/kt"})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 30; i++ {
		if _, err := pp.Send(ctx, &pulsar.ProducerMessage{Key: "pk" + strconv.Itoa(i), Payload: []byte("p" + strconv.Itoa(i)),
			Properties: map[string]string{"from": "pulsar"}}); err != nil {
			t.Fatal(err)
		}
	}
	pp.Close()
	group := kafkaClient(t, kafkaAddr, kgo.ConsumeTopics("kt"), kgo.ConsumerGroup("g1"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.DisableAutoCommit())
	recs := consumeKafka(t, group, n+30)
	fromPulsar := 0
	for _, r := range recs {
		if strings.HasPrefix(string(r.Value), "p") {
			fromPulsar++
			if string(r.Key) != "pk"+strings.TrimPrefix(string(r.Value), "p") || len(r.Headers) != 1 || r.Headers[0].Key != "from" {
				t.Fatalf("kafka got key %q headers %v for %q", r.Key, r.Headers, r.Value)
			}
		}
	}
	if fromPulsar != 30 || len(recs) != n+30 {
		t.Fatalf("kafka consumed %d records, %d from pulsar", len(recs), fromPulsar)
	}
	if err := group.CommitUncommittedOffsets(ctx); err != nil {
		t.Fatal(err)
	}
	committed, err := adm.FetchOffsets(ctx, "g1")
	if err != nil {
		t.Fatal(err)
	}
	ends, err := adm.ListEndOffsets(ctx, "kt")
	if err != nil {
		t.Fatal(err)
	}
	ends.Each(func(o kadm.ListedOffset) {
		if c, _ := committed.Lookup("kt", o.Partition); c.At != o.Offset {
			t.Fatalf("partition %d committed %d, end %d", o.Partition, c.At, o.Offset)
		}
	})
	group.Close()

	// The group is a Pulsar subscription with no backlog.
	resp, err = http.Get("http://" + httpAddr + "/admin/v2/persistent/public/default/kt-partition-0/stats")
	if err != nil {
		t.Fatal(err)
	}
	var st struct {
		Subscriptions map[string]struct{ MsgBacklog int64 }
	}
	_ = json.NewDecoder(resp.Body).Decode(&st)
	resp.Body.Close()
	if sub, ok := st.Subscriptions["g1"]; !ok || sub.MsgBacklog != 0 {
		t.Fatalf("subscriptions of kt-partition-0: %+v", st.Subscriptions)
	}

	// ListOffsets by timestamp: before everything -> the start, after -> the end.
	before, err := adm.ListOffsetsAfterMilli(ctx, time.Now().Add(-time.Hour).UnixMilli(), "kt")
	if err != nil {
		t.Fatal(err)
	}
	after, err := adm.ListOffsetsAfterMilli(ctx, time.Now().Add(time.Hour).UnixMilli(), "kt")
	if err != nil {
		t.Fatal(err)
	}
	before.Each(func(o kadm.ListedOffset) {
		if o.Offset != 0 || o.Err != nil {
			t.Fatalf("offset before everything on %d: %d %v", o.Partition, o.Offset, o.Err)
		}
	})
	after.Each(func(o kadm.ListedOffset) {
		if end, _ := ends.Lookup("kt", o.Partition); o.Offset != end.Offset {
			t.Fatalf("offset after everything on %d: %d, end %d", o.Partition, o.Offset, end.Offset)
		}
	})

	// Committed offsets survive a restart; the group resumes after them.
	if err := p.stop(ctx); err != nil {
		t.Fatal(err)
	}
	_, _, _, kafkaAddr = startKafkaStandalone(t, dir, 0)
	adm = kadm.NewClient(kafkaClient(t, kafkaAddr))
	again, err := adm.FetchOffsets(ctx, "g1")
	if err != nil {
		t.Fatal(err)
	}
	committed.Each(func(o kadm.OffsetResponse) {
		if a, _ := again.Lookup(o.Topic, o.Partition); a.At != o.At {
			t.Fatalf("partition %d committed %d before the restart, %d after", o.Partition, o.At, a.At)
		}
	})
	prod = kafkaClient(t, kafkaAddr, kgo.DefaultProduceTopic("kt"))
	for i := 0; i < 5; i++ {
		if err := prod.ProduceSync(ctx, &kgo.Record{Value: []byte("after" + strconv.Itoa(i))}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	group = kafkaClient(t, kafkaAddr, kgo.ConsumeTopics("kt"), kgo.ConsumerGroup("g1"))
	for _, r := range consumeKafka(t, group, 5) {
		if !strings.HasPrefix(string(r.Value), "after") {
			t.Fatalf("the group resumed at %q, not after its commit", r.Value)
		}
	}
}

// Kafka's own tools (kafka-topics, kafka-console-producer/-consumer, kafka-consumer-groups,
// kafka-producer-perf-test, from Maven Central on this machine's Java) against a real
// standalone.
func TestKafkaCLIToolsOnStandalone(t *testing.T) {
	_, _, _, kafkaAddr := startKafkaStandalone(t, t.TempDir(), 0)
	testenv.KafkaToolsSuite(t, kafkaAddr)
}
