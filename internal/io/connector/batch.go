package connector

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"
)

// Backoff is an exponential retry delay: Initial, doubling up to Max.
type Backoff struct {
	Initial, Max time.Duration
}

// DefaultBackoff is 100 ms doubling to 30 s.
var DefaultBackoff = Backoff{Initial: 100 * time.Millisecond, Max: 30 * time.Second}

// Retry runs fn until it succeeds, returns a Permanent error, or ctx ends; between
// attempts it waits with backoff and calls onRetry with the error (for status and logs).
// A target that is down is retried for as long as it takes: the sink resumes by itself
// when the database or server is back.
func Retry(ctx context.Context, b Backoff, onRetry func(error), fn func(context.Context) error) error {
	if b.Initial <= 0 {
		b = DefaultBackoff
	}
	wait := b.Initial
	for {
		err := fn(ctx)
		if err == nil || IsPermanent(err) {
			return err
		}
		if ctx.Err() != nil {
			return errors.Join(ctx.Err(), err)
		}
		if onRetry != nil {
			onRetry(err)
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return errors.Join(ctx.Err(), err)
		case <-t.C:
		}
		wait = min(wait*2, b.Max)
	}
}

// Batcher collects a sink's records and writes them in batches of Size, or whatever it
// holds once the oldest record has waited Interval. A batch that fails transiently is
// retried with backoff until it is written (the records stay in order and unacknowledged);
// a batch that fails permanently is written one record at a time, so only the records the
// target refuses are failed (and reach the dead-letter topic). Add blocks while a batch is
// being written, which holds the consumer back: memory stays bounded by Size.
type Batcher struct {
	Size     int
	Interval time.Duration
	Backoff  Backoff
	// Write stores recs; it must be all or nothing for a transient error (a transaction),
	// or idempotent (upserts) so that a retried batch does not write twice.
	Write func(ctx context.Context, recs []*Record) error
	// OnRetry sees every error that is retried.
	OnRetry func(error)
	Logger  *slog.Logger

	mu     sync.Mutex // held while a batch is written
	bufMu  sync.Mutex
	buf    []*Record
	first  time.Time
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// Start begins the interval flushes; the batcher writes under ctx (the instance's: a
// stop ends a retry) until Close.
func (b *Batcher) Start(ctx context.Context) {
	if b.Size <= 0 {
		b.Size = 1
	}
	if b.Logger == nil {
		b.Logger = slog.New(slog.DiscardHandler)
	}
	b.ctx, b.cancel = context.WithCancel(ctx)
	if b.Interval > 0 {
		b.wg.Add(1)
		go b.tick()
	}
}

func (b *Batcher) tick() {
	defer b.wg.Done()
	t := time.NewTicker(max(b.Interval/4, time.Millisecond))
	defer t.Stop()
	for {
		select {
		case <-b.ctx.Done():
			return
		case <-t.C:
			b.bufMu.Lock()
			due := len(b.buf) > 0 && time.Since(b.first) >= b.Interval
			b.bufMu.Unlock()
			if due {
				b.Flush()
			}
		}
	}
}

// Add queues rec, writing a batch when Size records are queued.
func (b *Batcher) Add(rec *Record) {
	b.bufMu.Lock()
	if len(b.buf) == 0 {
		b.first = time.Now()
	}
	b.buf = append(b.buf, rec)
	full := len(b.buf) >= b.Size
	b.bufMu.Unlock()
	if full {
		b.Flush()
	}
}

// Flush writes what is queued now.
func (b *Batcher) Flush() { b.flush(b.ctx) }

func (b *Batcher) flush(ctx context.Context) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.bufMu.Lock()
	recs := b.buf
	b.buf = nil
	b.bufMu.Unlock()
	if len(recs) > 0 {
		b.write(ctx, recs)
	}
}

func (b *Batcher) write(ctx context.Context, recs []*Record) {
	err := Retry(ctx, b.Backoff, b.OnRetry, func(ctx context.Context) error { return b.Write(ctx, recs) })
	switch {
	case err == nil:
		for _, r := range recs {
			r.Ack()
		}
	case IsPermanent(err) && len(recs) > 1:
		// Find the records the target refuses: write each alone.
		for _, r := range recs {
			one := []*Record{r}
			err := Retry(ctx, b.Backoff, b.OnRetry, func(ctx context.Context) error { return b.Write(ctx, one) })
			if err == nil {
				r.Ack()
			} else {
				r.Fail(err)
			}
		}
	default:
		// Permanent for a single record, or stopping: the record comes back (or goes to the
		// dead-letter topic once its retries are spent).
		for _, r := range recs {
			r.Fail(err)
		}
	}
}

// Close stops the interval flushes and writes what is queued, retrying until ctx ends
// (what is still unwritten then is failed, so it comes back).
func (b *Batcher) Close(ctx context.Context) {
	b.cancel()
	b.wg.Wait()
	b.flush(ctx)
}
