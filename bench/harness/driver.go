package harness

import "context"

// Driver is one connected client of one system under test. Partition p of a run maps to a
// topic (Magnetar: persistent://public/default/<base>-p) or a subject (NATS: <base>.p in
// one file stream), so both sides see the same shape.
type Driver interface {
	// Prepare creates what the run needs before producers start (NATS: the stream).
	Prepare(ctx context.Context, base string, partitions int) error
	NewProducer(ctx context.Context, base string, parts []int, opts ProducerOpts) (Producer, error)
	// NewConsumer subscribes from the earliest message (name is the subscription/durable).
	NewConsumer(ctx context.Context, base, name string, parts []int) (Consumer, error)
	Close()
}

// ProducerOpts are per-workload client settings.
type ProducerOpts struct {
	// NoBatching turns client-side batching off (Pulsar); NATS never batches async publishes.
	NoBatching bool
}

// Producer publishes asynchronously; done runs exactly once per accepted message, from any
// goroutine. Publish may block for flow control (its own queue full).
type Producer interface {
	Publish(part int, payload []byte, done func(error)) error
	// Flush sends anything buffered (e.g. a partial atomic batch) and waits for its acks.
	Flush(ctx context.Context) error
	Close()
}

// Consumer delivers payloads to fn until ctx ends; it acknowledges on its own.
type Consumer interface {
	Run(ctx context.Context, fn func(payload []byte)) error
	Close()
}
