package kafka

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/IBM/sarama"
	segkafka "github.com/segmentio/kafka-go"
)

// IBM/sarama and segmentio/kafka-go against the protocol layer: both speak older API
// versions than franz-go and fill fields differently, which is what these tests are for.

func TestSaramaProduceConsumeGroup(t *testing.T) {
	_, _, addr := startMem(t)
	ctx := testCtx(t)
	cfg := sarama.NewConfig()
	cfg.Version = sarama.V3_6_0_0
	cfg.Producer.Return.Successes = true
	cfg.Producer.RequiredAcks = sarama.WaitForAll
	cfg.Producer.Idempotent = true
	cfg.Net.MaxOpenRequests = 1
	cfg.Producer.Compression = sarama.CompressionSnappy
	cfg.Consumer.Offsets.Initial = sarama.OffsetOldest
	cfg.Metadata.AllowAutoTopicCreation = true
	admin, err := sarama.NewClusterAdmin([]string{addr}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	if err := admin.CreateTopic("sarama", &sarama.TopicDetail{NumPartitions: 2, ReplicationFactor: 1}, false); err != nil {
		t.Fatal(err)
	}
	prod, err := sarama.NewSyncProducer([]string{addr}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	const n = 60
	for i := 0; i < n; i++ {
		if _, _, err := prod.SendMessage(&sarama.ProducerMessage{Topic: "sarama", Key: sarama.StringEncoder(fmt.Sprint(i % 3)),
			Value: sarama.StringEncoder(fmt.Sprint(i)), Headers: []sarama.RecordHeader{{Key: []byte("h"), Value: []byte("v")}}}); err != nil {
			t.Fatal(err)
		}
	}
	_ = prod.Close()
	grp, err := sarama.NewConsumerGroup([]string{addr}, "sarama-group", cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer grp.Close()
	h := &saramaHandler{seen: map[string]bool{}, done: make(chan struct{}), want: n}
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		for cctx.Err() == nil {
			if err := grp.Consume(cctx, []string{"sarama"}, h); err != nil && cctx.Err() == nil {
				t.Errorf("consume: %v", err)
				return
			}
		}
	}()
	select {
	case <-h.done:
	case <-ctx.Done():
		t.Fatal("sarama did not consume every message")
	}
	cancel()
	offs, err := admin.ListConsumerGroupOffsets("sarama-group", nil)
	if err != nil {
		t.Fatal(err)
	}
	var sum int64
	for _, ps := range offs.Blocks {
		for _, b := range ps {
			sum += b.Offset
		}
	}
	if sum != n {
		t.Fatalf("committed offsets add up to %d, want %d", sum, n)
	}
}

type saramaHandler struct {
	mu   sync.Mutex
	seen map[string]bool
	want int
	done chan struct{}
}

func (h *saramaHandler) Setup(sarama.ConsumerGroupSession) error   { return nil }
func (h *saramaHandler) Cleanup(sarama.ConsumerGroupSession) error { return nil }
func (h *saramaHandler) ConsumeClaim(s sarama.ConsumerGroupSession, c sarama.ConsumerGroupClaim) error {
	for m := range c.Messages() {
		if len(m.Headers) != 1 || string(m.Headers[0].Value) != "v" {
			return fmt.Errorf("headers %v", m.Headers)
		}
		s.MarkMessage(m, "")
		s.Commit()
		h.mu.Lock()
		h.seen[string(m.Value)] = true
		if len(h.seen) == h.want {
			close(h.done)
			h.want = -1
		}
		h.mu.Unlock()
	}
	return nil
}

func TestSegmentioKafkaGo(t *testing.T) {
	_, _, addr := startMem(t)
	ctx := testCtx(t)
	conn, err := segkafka.DialContext(ctx, "tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	if err := conn.CreateTopics(segkafka.TopicConfig{Topic: "seg", NumPartitions: 3, ReplicationFactor: 1}); err != nil {
		t.Fatal(err)
	}
	_ = conn.Close()
	w := &segkafka.Writer{Addr: segkafka.TCP(addr), Topic: "seg", RequiredAcks: segkafka.RequireAll,
		Compression: segkafka.Zstd, Balancer: &segkafka.Hash{}, BatchTimeout: 10 * time.Millisecond}
	const n = 90
	var msgs []segkafka.Message
	for i := 0; i < n; i++ {
		msgs = append(msgs, segkafka.Message{Key: []byte(fmt.Sprint(i % 9)), Value: []byte(fmt.Sprint(i))})
	}
	if err := w.WriteMessages(ctx, msgs...); err != nil {
		t.Fatal(err)
	}
	_ = w.Close()
	r := segkafka.NewReader(segkafka.ReaderConfig{Brokers: []string{addr}, GroupID: "seg-group", Topic: "seg",
		StartOffset: segkafka.FirstOffset, MaxWait: 500 * time.Millisecond, CommitInterval: 0})
	defer r.Close()
	seen := map[string]bool{}
	for len(seen) < n {
		m, err := r.FetchMessage(ctx)
		if err != nil {
			t.Fatalf("after %d messages: %v", len(seen), err)
		}
		seen[string(m.Value)] = true
		if err := r.CommitMessages(ctx, m); err != nil {
			t.Fatal(err)
		}
	}
}
