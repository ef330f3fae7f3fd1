package lakehouse

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"time"

	"github.com/magnetar-io/magnetar/internal/topics"
	"github.com/magnetar-io/magnetar/internal/wire/pb"
)

// Properties of a dead letter (doc.go, "Dead letters").
const (
	dlqOriginTopic = "ICEBERG_ORIGIN_TOPIC"
	dlqOriginID    = "ICEBERG_ORIGIN_MESSAGE_ID"
	dlqReason      = "ICEBERG_ERROR"
)

// maxDeadLettersInFlight bounds the dead letters published and not yet durable.
const maxDeadLettersInFlight = 1024

// deadLetters publishes one writer's unconvertible records to its dead-letter topic
// through the topic service, as a producer of its own.
type deadLetters struct {
	svc   *Service
	topic topics.Name
	log   *slog.Logger
	p     *topics.Producer
	seq   int64 // sequence id of the last dead letter published

	mu       sync.Mutex
	inFlight int
	failed   error
	drained  chan struct{} // closed and replaced when inFlight drops to 0
}

func newDeadLetters(svc *Service, topic topics.Name, log *slog.Logger) *deadLetters {
	return &deadLetters{svc: svc, topic: topic, log: log, drained: make(chan struct{})}
}

// publish sends one dead letter; its durability is checked by wait, before the writer's
// position passes it.
func (d *deadLetters) publish(ctx context.Context, origin topics.Name, p Position, batchIndex int32, md *pb.MessageMetadata, m *message, cause error) error {
	if d.p == nil {
		t, err := d.svc.topics.Topic(ctx, d.topic, topics.Load{Create: true})
		if err != nil {
			return fmt.Errorf("dead-letter topic %s: %w", d.topic, err)
		}
		if d.p, err = t.AddProducer(ctx, topics.ProducerSpec{}, dlqClient{}); err != nil {
			return fmt.Errorf("dead-letter producer on %s: %w", d.topic, err)
		}
	}
	bi := int(batchIndex)
	if bi < 0 {
		bi = 0
	}
	spec := topics.MessageSpec{Properties: map[string]string{
		dlqOriginTopic: origin.String(),
		dlqOriginID:    "(" + strconv.FormatInt(p.Ledger, 10) + "," + strconv.FormatInt(p.Entry, 10) + "," + strconv.Itoa(bi) + ")",
		dlqReason:      cause.Error(),
	}}
	if m != nil {
		spec.Payload, spec.Key = m.payload, m.key
		for _, kv := range m.props {
			if _, ours := spec.Properties[kv.GetKey()]; !ours {
				spec.Properties[kv.GetKey()] = kv.GetValue()
			}
		}
		if m.eventTime > 0 {
			spec.EventTime = time.UnixMilli(int64(m.eventTime))
		}
	}
	d.seq++
	spec.ProducerName, spec.SequenceID = d.p.Name(), d.seq
	msg, err := topics.BuildMessage(spec)
	if err != nil {
		return fmt.Errorf("dead letter: %w", err)
	}
	for {
		d.mu.Lock()
		if d.failed != nil {
			err := d.failed
			d.mu.Unlock()
			return err
		}
		if d.inFlight < maxDeadLettersInFlight {
			d.inFlight++
			d.mu.Unlock()
			break
		}
		ch := d.drained
		d.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	d.log.Warn("iceberg writer: record to the dead-letter topic", "topic", origin.String(), "entry", p.String(), "batchIndex", batchIndex, "deadLetterTopic", d.topic.String(), "error", cause)
	if err := d.p.Publish(msg, d.done); err != nil {
		d.done(topics.Position{}, err)
		return d.wait(ctx)
	}
	return nil
}

func (d *deadLetters) done(_ topics.Position, err error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if err != nil && d.failed == nil {
		d.failed = fmt.Errorf("dead letter to %s: %w", d.topic, err)
	}
	d.inFlight--
	if d.inFlight == 0 {
		close(d.drained)
		d.drained = make(chan struct{})
	}
}

// wait returns once every dead letter published is durable, or the first failure.
func (d *deadLetters) wait(ctx context.Context) error {
	for {
		d.mu.Lock()
		if d.failed != nil {
			err := d.failed
			d.mu.Unlock()
			return err
		}
		if d.inFlight == 0 {
			d.mu.Unlock()
			return nil
		}
		ch := d.drained
		d.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

func (d *deadLetters) close() {
	if d.p != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		if err := d.wait(ctx); err != nil && !errors.Is(err, context.Canceled) {
			d.log.Warn("dead letters not all stored", "deadLetterTopic", d.topic.String(), "error", err)
		}
		cancel()
		d.p.Close()
	}
}

// dlqClient is the topic service's view of the dead-letter producer: it is in process and
// never waits for exclusive access.
type dlqClient struct{}

func (dlqClient) Granted(*topics.Producer) {}
func (dlqClient) Disconnect()              {}
func (dlqClient) Refuse(error)             {}
func (dlqClient) Alive() bool              { return true }
func (dlqClient) Address() string          { return "in-process iceberg writer" }
func (dlqClient) Version() string          { return "magnetar-lakehouse" }
