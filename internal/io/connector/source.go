package connector

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
)

// sourceRun is one running source instance: the source, and a producer per destination.
type sourceRun struct {
	*ictx
	client pulsar.Client

	mu        sync.Mutex
	producers map[string]*topicProducer
	fatal     chan error
	stopping  bool
}

type topicProducer struct {
	p      pulsar.Producer
	schema *Schema
}

func (in *Instance) runSource(ctx context.Context, client pulsar.Client) error {
	src := in.def.NewSource()
	cfg := NewConfig(in.spec.Configs, in.spec.Secrets)
	if v, ok := src.(Validator); ok {
		if err := v.Validate(cfg); err != nil {
			return err
		}
		if err := cfg.Err(); err != nil {
			return err
		}
	}
	r := &sourceRun{ictx: &ictx{in: in, cfg: cfg}, client: client, producers: map[string]*topicProducer{}, fatal: make(chan error, 1)}
	in.stats.SetFailure(nil)
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	srcDone := make(chan error, 1)
	go func() { srcDone <- src.Run(runCtx, r) }()
	in.log.Info("source running", "topic", in.spec.SourceTopic)
	var err error
	select {
	case err = <-srcDone:
	case err = <-r.fatal:
		cancel()
		<-srcDone
	}
	if errors.Is(err, context.Canceled) && ctx.Err() != nil {
		err = nil
	}
	// Let the receipts of what was sent come back (and the source checkpoint them)
	// before the source closes.
	r.mu.Lock()
	r.stopping = true
	prods := r.producers
	r.producers = map[string]*topicProducer{}
	r.mu.Unlock()
	for _, tp := range prods {
		_ = tp.p.Flush()
		tp.p.Close()
	}
	if cerr := src.Close(); cerr != nil && err == nil && ctx.Err() == nil {
		err = cerr
	}
	if err == nil && ctx.Err() == nil {
		err = errors.New("the source stopped by itself")
	}
	return err
}

// PulsarClient is the instance's client (ClientProvider).
func (r *sourceRun) PulsarClient() pulsar.Client { return r.client }

func (r *sourceRun) fail(err error) {
	r.in.stats.AddSystemException(err)
	select {
	case r.fatal <- err:
	default:
	}
}

// Emit publishes rec asynchronously; its OnAck runs after the broker's receipt.
func (r *sourceRun) Emit(ctx context.Context, rec *Record) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	topic := rec.Topic
	if topic == "" {
		topic = r.in.spec.SourceTopic
	}
	if topic == "" {
		err := errors.New("connector: the record has no topic and the source no topicName")
		r.fail(err)
		return err
	}
	p, err := r.producer(topic, rec.Schema)
	if err != nil {
		r.fail(err)
		return err
	}
	r.in.stats.AddReceived(1)
	msg := &pulsar.ProducerMessage{Payload: rec.Value, Key: rec.Key, Properties: rec.Properties, EventTime: rec.EventTime}
	began := time.Now()
	onAck := rec.OnAck
	p.SendAsync(ctx, msg, func(_ pulsar.MessageID, _ *pulsar.ProducerMessage, err error) {
		if err != nil {
			r.fail(fmt.Errorf("publishing to %s: %w", topic, err))
			return
		}
		r.in.stats.AddSuccess(time.Since(began))
		if onAck != nil {
			onAck()
		}
	})
	return nil
}

// producer returns topic's producer, opening one with schema when there is none or the
// topic's schema changed (the old producer is flushed first, so order is kept).
func (r *sourceRun) producer(topic string, schema *Schema) (pulsar.Producer, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.stopping {
		return nil, context.Canceled
	}
	tp := r.producers[topic]
	if tp != nil && tp.schema.Equal(schema) {
		return tp.p, nil
	}
	if tp != nil {
		if err := tp.p.Flush(); err != nil {
			return nil, fmt.Errorf("flushing %s before its schema changes: %w", topic, err)
		}
		tp.p.Close()
		delete(r.producers, topic)
	}
	opts := pulsar.ProducerOptions{
		Topic: topic, MaxPendingMessages: r.in.spec.MaxPendingMessages, SendTimeout: 30 * time.Second,
		DisableBatching: r.in.spec.BatchingDisabled, BatchingMaxPublishDelay: 5 * time.Millisecond,
		CompressionType: compression(r.in.spec.CompressionType),
	}
	if schema != nil {
		ps, err := pulsarSchema(schema)
		if err != nil {
			return nil, err
		}
		opts.Schema = ps
	}
	p, err := r.client.CreateProducer(opts)
	if err != nil {
		return nil, fmt.Errorf("producer for %s: %w", topic, err)
	}
	r.producers[topic] = &topicProducer{p: p, schema: schema}
	return p, nil
}

func compression(name string) pulsar.CompressionType {
	switch strings.ToUpper(name) {
	case "LZ4":
		return pulsar.LZ4
	case "ZLIB":
		return pulsar.ZLib
	case "ZSTD":
		return pulsar.ZSTD
	}
	return pulsar.NoCompression
}

func pulsarSchema(s *Schema) (pulsar.Schema, error) {
	switch strings.ToUpper(s.Type) {
	case "JSON":
		return pulsar.NewJSONSchemaWithValidation(s.Definition, s.Properties)
	case "AVRO":
		return pulsar.NewAvroSchemaWithValidation(s.Definition, s.Properties)
	case "STRING":
		return pulsar.NewStringSchema(s.Properties), nil
	case "BYTES", "":
		return pulsar.NewBytesSchema(s.Properties), nil
	}
	return nil, fmt.Errorf("connector: schema type %q is not JSON, AVRO, STRING or BYTES", s.Type)
}
