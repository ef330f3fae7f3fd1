package kafka

import (
	"context"
	"errors"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/magnetar-io/magnetar/internal/io/connector"
)

type sink struct {
	opts      []kgo.Opt
	batchTime time.Duration
	cl        *kgo.Client
	b         *connector.Batcher
	recs      []*kgo.Record
	unknown   []string // producerConfigProperties we do not honour (warned at Open)
}

func (s *sink) Validate(c connector.Config) error {
	c, props, unknown := withProperties(c, producerProps, producerOnly) // props.go
	s.unknown = unknown
	opts, topic := clientOpts(c)
	opts = append(opts, kgo.DefaultProduceTopic(topic),
		kgo.ProducerBatchMaxBytes(int32(c.IntRange("maxRequestSize", 1<<20, 1024, 1<<30))),
		kgo.ProducerLinger(0))
	switch c.OneOf("acks", "all", "all", "-1", "1", "0") {
	case "1":
		opts = append(opts, kgo.RequiredAcks(kgo.LeaderAck()), kgo.DisableIdempotentWrite())
	case "0":
		opts = append(opts, kgo.RequiredAcks(kgo.NoAck()), kgo.DisableIdempotentWrite())
	default:
		opts = append(opts, kgo.RequiredAcks(kgo.AllISRAcks()))
	}
	// batchSize is Kafka's producer batch.size in bytes; records are grouped per batch of
	// the sink until about that many bytes are queued.
	c.IntRange("batchSize", 16384, 1, 1<<30)
	s.batchTime = c.Millis("batchTimeMs", 10*time.Millisecond)
	s.opts = append(opts, props...)
	return nil
}

func (s *sink) Open(ctx context.Context, sc connector.Context) error {
	cl, err := kgo.NewClient(s.opts...)
	if err != nil {
		return wrapKafka("client", err)
	}
	s.cl = cl
	warnUnknown(sc.Logger(), producerProps, s.unknown)
	s.b = &connector.Batcher{Size: 500, Interval: max(s.batchTime, time.Millisecond), Write: s.write, Logger: sc.Logger(),
		OnRetry: func(err error) { sc.Logger().Warn("kafka sink: producing failed; retrying", "err", err) }}
	s.b.Start(ctx)
	return nil
}

func (s *sink) Write(_ context.Context, rec *connector.Record) error {
	s.b.Add(rec)
	return nil
}

// write produces recs and returns once Kafka acknowledged all of them.
func (s *sink) write(ctx context.Context, recs []*connector.Record) error {
	s.recs = s.recs[:0]
	for _, r := range recs {
		kr := &kgo.Record{Value: r.Value, Timestamp: r.EventTime}
		if r.Key != "" {
			kr.Key = []byte(r.Key)
		}
		for k, v := range r.Properties {
			kr.Headers = append(kr.Headers, kgo.RecordHeader{Key: k, Value: []byte(v)})
		}
		s.recs = append(s.recs, kr)
	}
	pctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	err := s.cl.ProduceSync(pctx, s.recs...).FirstErr()
	if err == nil {
		return nil
	}
	if errors.Is(err, kerr.MessageTooLarge) || errors.Is(err, kerr.InvalidRecord) || errors.Is(err, kerr.CorruptMessage) ||
		errors.Is(err, kerr.RecordListTooLarge) {
		return connector.Permanent(wrapKafka("produce", err))
	}
	return wrapKafka("produce", err)
}

func (s *sink) Close() error {
	if s.b != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		s.b.Close(ctx)
		cancel()
	}
	if s.cl != nil {
		s.cl.Close()
	}
	return nil
}
