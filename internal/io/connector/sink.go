package connector

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
)

// defaultMaxMessageRetries is how often a record the sink refuses is redelivered before it
// goes to the dead-letter topic when maxMessageRetries is not set.
const defaultMaxMessageRetries = 3

// Dead-letter message properties (the Pulsar client's names, plus ours).
const (
	PropRealTopic       = "REAL_TOPIC"
	PropOriginMessageID = "ORIGIN_MESSAGE_ID"
	PropException       = "EXCEPTION"
)

type sinkRun struct {
	*ictx
	client   pulsar.Client
	consumer pulsar.Consumer
	retries  uint32

	mu  sync.Mutex
	dlq map[string]pulsar.Producer
}

func (in *Instance) runSink(ctx context.Context, client pulsar.Client) error {
	sink := in.def.NewSink()
	cfg := NewConfig(in.spec.Configs, in.spec.Secrets)
	if v, ok := sink.(Validator); ok {
		if err := v.Validate(cfg); err != nil {
			return err
		}
		if err := cfg.Err(); err != nil {
			return err
		}
	}
	r := &sinkRun{ictx: &ictx{in: in, cfg: cfg}, client: client, dlq: map[string]pulsar.Producer{}, retries: defaultMaxMessageRetries}
	if in.spec.MaxMessageRetries > 0 {
		r.retries = uint32(in.spec.MaxMessageRetries)
	}
	defer r.closeDLQ()
	if err := sink.Open(ctx, r); err != nil {
		return fmt.Errorf("opening the sink: %w", err)
	}
	closed := false
	defer func() {
		if !closed {
			_ = sink.Close()
		}
	}()
	c, err := client.Subscribe(in.consumerOptions())
	if err != nil {
		return fmt.Errorf("subscribing %s: %w", in.spec.SubscriptionName, err)
	}
	r.consumer = c
	defer c.Close()
	in.stats.SetFailure(nil)
	in.log.Info("sink running", "inputs", in.spec.Inputs, "pattern", in.spec.TopicsPattern, "subscription", in.spec.SubscriptionName)
	for {
		select {
		case <-ctx.Done():
			// Close first: it writes and acknowledges what the sink holds.
			closed = true
			return sink.Close()
		case cm, ok := <-c.Chan():
			if !ok {
				return errors.New("the consumer closed")
			}
			if err := sink.Write(ctx, r.record(cm.Message)); err != nil {
				if ctx.Err() != nil {
					closed = true
					_ = sink.Close()
					return nil
				}
				return fmt.Errorf("sink: %w", err)
			}
		}
	}
}

func (in *Instance) consumerOptions() pulsar.ConsumerOptions {
	s := in.spec
	o := pulsar.ConsumerOptions{
		SubscriptionName: s.SubscriptionName, Name: fmt.Sprintf("%s-%d", s.FQFN(), s.InstanceID),
		NackRedeliveryDelay: s.NegativeAckRedeliveryDelay, SubscriptionInitialPosition: pulsar.SubscriptionPositionLatest,
	}
	if len(s.Inputs) > 0 {
		o.Topics = s.Inputs
	} else {
		o.TopicsPattern = s.TopicsPattern
	}
	switch s.SubscriptionType {
	case SubFailover:
		o.Type = pulsar.Failover
	case SubKeyShared:
		o.Type = pulsar.KeyShared
	default:
		o.Type = pulsar.Shared
	}
	if s.SubscriptionPosition == "Earliest" {
		o.SubscriptionInitialPosition = pulsar.SubscriptionPositionEarliest
	}
	if s.ReceiverQueueSize > 0 {
		o.ReceiverQueueSize = s.ReceiverQueueSize
	}
	return o
}

// record wraps a consumed message; its Ack/Fail acknowledge it per the guarantee.
// messageIDString is an ID as Pulsar's Java client prints it: ledger:entry:partition, and
// :batchIndex for a message of a batch (the Go client's String leaves the index out, so
// the messages of one batch would look alike).
func messageIDString(id pulsar.MessageID) string {
	s := strconv.FormatInt(id.LedgerID(), 10) + ":" + strconv.FormatInt(id.EntryID(), 10) + ":" + strconv.FormatInt(int64(id.PartitionIdx()), 10)
	if id.BatchSize() > 0 && id.BatchIdx() >= 0 {
		s += ":" + strconv.FormatInt(int64(id.BatchIdx()), 10)
	}
	return s
}

func (r *sinkRun) record(m pulsar.Message) *Record {
	r.in.stats.AddReceived(1)
	atMost := r.in.spec.ProcessingGuarantees == AtMostOnce
	if atMost {
		_ = r.consumer.Ack(m)
	}
	rec := &Record{
		Topic: m.Topic(), Key: m.Key(), Value: m.Payload(), Properties: m.Properties(), EventTime: m.EventTime(),
		MessageID: messageIDString(m.ID()), PublishTime: m.PublishTime(), RedeliveryCount: m.RedeliveryCount(),
	}
	began := time.Now()
	var once sync.Once
	rec.done = func(err error) {
		once.Do(func() { r.finish(m, rec, err, atMost, began) })
	}
	return rec
}

func (r *sinkRun) finish(m pulsar.Message, rec *Record, err error, atMost bool, began time.Time) {
	if err == nil {
		r.in.stats.AddSuccess(time.Since(began))
		if !atMost {
			_ = r.consumer.Ack(m)
		}
		return
	}
	r.in.stats.AddUserException(err)
	if atMost {
		return
	}
	if !IsPermanent(err) || m.RedeliveryCount()+1 < r.retries {
		r.consumer.Nack(m)
		return
	}
	r.deadLetter(m, rec, err)
}

// deadLetter publishes a record the sink can never write to the dead-letter topic and
// acknowledges it once that is stored; if the dead-letter topic fails it comes back.
func (r *sinkRun) deadLetter(m pulsar.Message, rec *Record, cause error) {
	topic := r.in.spec.deadLetterTopic(rec.Topic)
	p, err := r.dlqProducer(topic)
	if err != nil {
		r.in.stats.AddSystemException(err)
		r.consumer.Nack(m)
		return
	}
	props := make(map[string]string, len(rec.Properties)+3)
	for k, v := range rec.Properties {
		props[k] = v
	}
	props[PropRealTopic] = rec.Topic
	props[PropOriginMessageID] = rec.MessageID
	props[PropException] = cause.Error()
	msg := &pulsar.ProducerMessage{Payload: rec.Value, Key: rec.Key, Properties: props, EventTime: rec.EventTime}
	p.SendAsync(context.Background(), msg, func(_ pulsar.MessageID, _ *pulsar.ProducerMessage, err error) {
		if err != nil {
			r.in.stats.AddSystemException(fmt.Errorf("dead-letter topic %s: %w", topic, err))
			r.consumer.Nack(m)
			return
		}
		r.in.stats.AddUserMetric("deadLetteredTotal", 1)
		r.in.log.Warn("record sent to the dead-letter topic", "topic", rec.Topic, "id", rec.MessageID, "dlq", topic, "err", cause)
		_ = r.consumer.Ack(m)
	})
}

func (r *sinkRun) dlqProducer(topic string) (pulsar.Producer, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.dlq == nil {
		return nil, errors.New("the sink is stopping")
	}
	if p, ok := r.dlq[topic]; ok {
		return p, nil
	}
	p, err := r.client.CreateProducer(pulsar.ProducerOptions{Topic: topic, DisableBatching: true})
	if err != nil {
		return nil, fmt.Errorf("dead-letter producer %s: %w", topic, err)
	}
	r.dlq[topic] = p
	return p, nil
}

func (r *sinkRun) closeDLQ() {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, p := range r.dlq {
		_ = p.Flush()
		p.Close()
	}
	r.dlq = nil
}
