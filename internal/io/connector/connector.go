package connector

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
)

// Record is one message: emitted by a source (to be published) or read by a sink (to be
// written).
type Record struct {
	// Topic is, for a source, the destination ("" sends to the source's topicName) and, for
	// a sink, the input topic the record was read from.
	Topic string
	Key   string
	// Value is the payload; a record with a key and a nil value is a tombstone.
	Value      []byte
	Properties map[string]string
	EventTime  time.Time
	// Schema is the destination topic's schema for a source record (nil: none, bytes). A
	// record whose schema differs from the one its topic's producer carries makes the
	// runner open a new producer with it: the topic gets a new schema version (DDL).
	Schema *Schema
	// OnAck, set by a source, runs once the record is durably published (in the order the
	// broker acknowledges, which is emit order per topic).
	OnAck func()

	// Sink side: where the record came from.
	MessageID       string
	PublishTime     time.Time
	RedeliveryCount uint32

	done func(error)
}

// Ack tells the runner a sink record is durably written.
func (r *Record) Ack() {
	if r.done != nil {
		r.done(nil)
	}
}

// Fail tells the runner a sink record could not be written: err wrapped with Permanent
// sends it to the dead-letter topic; any other error has it redelivered.
func (r *Record) Fail(err error) {
	if r.done == nil {
		return
	}
	if err == nil {
		err = errors.New("connector: record failed")
	}
	r.done(err)
}

// SetDone installs the acknowledgement callback of a sink record (for tests of sinks and
// for runners outside this package).
func (r *Record) SetDone(fn func(error)) { r.done = fn }

// Schema is a topic schema as Pulsar registers it.
type Schema struct {
	// Type is Pulsar's schema type name: JSON, AVRO, STRING, BYTES.
	Type string
	// Definition is the schema definition (an Avro record schema for JSON and AVRO).
	Definition string
	Properties map[string]string
}

// Equal reports whether s and o describe the same schema.
func (s *Schema) Equal(o *Schema) bool {
	if s == nil || o == nil {
		return s == o
	}
	return s.Type == o.Type && s.Definition == o.Definition
}

// Source produces records.
type Source interface {
	// Run emits records through sc until ctx is done (it then returns ctx's error or nil)
	// or the source fails (an error: the worker restarts the instance with backoff).
	Run(ctx context.Context, sc SourceContext) error
	// Close releases the source after Run has returned and every emitted record was
	// either acknowledged or given up on; a source saves its final checkpoint here.
	Close() error
}

// SourceContext is what a running source emits through.
type SourceContext interface {
	Context
	// Emit hands a record to the runner, blocking while too many are in flight. It fails
	// only when the instance is stopping or failed.
	Emit(ctx context.Context, rec *Record) error
	// SourceException counts an error the source recovered from (numSourceExceptions).
	SourceException(err error)
}

// ClientProvider is implemented by the context a source runs with: a source that keeps
// state of its own in topics (the MySQL source's schema history, as Pulsar's Debezium
// sources do) reaches the broker with the instance's client (Pulsar's
// SourceContext.getPulsarClient).
type ClientProvider interface {
	PulsarClient() pulsar.Client
}

// Sink writes records.
type Sink interface {
	// Open connects to the target (a failure is retried by restarting the instance).
	Open(ctx context.Context, sc Context) error
	// Write takes rec; the sink calls rec.Ack or rec.Fail once, now or later (batching).
	// An error is fatal: the instance restarts and every unacknowledged record comes back.
	Write(ctx context.Context, rec *Record) error
	// Close flushes what can be flushed and releases the sink.
	Close() error
}

// Context is what sources and sinks get from their instance.
type Context interface {
	// Config is the connector's configs map.
	Config() Config
	// Logger logs as the instance.
	Logger() *slog.Logger
	// InstanceID and NumInstances place this instance among the connector's instances.
	InstanceID() int
	NumInstances() int
	// Name is tenant/namespace/name.
	Name() string
	// Offsets is the instance's durable checkpoint (the worker's state store).
	Offsets() OffsetStore
	// EffectivelyOnce reports whether processingGuarantees is EFFECTIVELY_ONCE.
	EffectivelyOnce() bool
}

// OffsetStore keeps one instance's checkpoint durably across restarts and moves.
type OffsetStore interface {
	// Load returns the saved checkpoint (nil, nil when there is none).
	Load(ctx context.Context) ([]byte, error)
	Save(ctx context.Context, b []byte) error
}

// permanentError marks an error retrying cannot fix.
type permanentError struct{ err error }

func (e *permanentError) Error() string { return e.err.Error() }
func (e *permanentError) Unwrap() error { return e.err }

// Permanent marks err as a failure that retrying cannot fix (a record the target refuses):
// after maxMessageRetries the record goes to the dead-letter topic.
func Permanent(err error) error {
	if err == nil {
		return nil
	}
	return &permanentError{err: err}
}

// Permanentf is Permanent(fmt.Errorf(...)).
func Permanentf(format string, args ...any) error { return Permanent(fmt.Errorf(format, args...)) }

// IsPermanent reports whether err was marked Permanent.
func IsPermanent(err error) bool {
	var p *permanentError
	return errors.As(err, &p)
}
