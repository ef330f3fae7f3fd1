package perf

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
	"github.com/apache/pulsar-client-go/pulsar"
	plog "github.com/apache/pulsar-client-go/pulsar/log"
)

// ErrBadOptions marks invalid load generator options.
var ErrBadOptions = errors.New("perf: bad options")

// timestampSize is the payload prefix produce writes and consume reads: the send time in
// nanoseconds since the Unix epoch (big endian), for end-to-end latency with sub-millisecond
// resolution (producer and consumer on one clock, or synchronised clocks).
const timestampSize = 8

// ProduceOptions configures RunProduce (pulsar-perf produce flags).
type ProduceOptions struct {
	ServiceURL        string
	Topics            []string
	ProducersPerTopic int
	Rate              float64 // total messages/s; 0: as fast as possible
	Size              int     // payload bytes (at least timestampSize)
	NumMessages       int64   // 0: no limit
	Duration          time.Duration
	BatchingDisabled  bool
	BatchDelay        time.Duration
	BatchMaxMessages  int
	BatchMaxBytes     int
	MaxPending        int // per producer
	Interval          time.Duration
	Progress          io.Writer // periodic lines; nil: none
	Logger            *slog.Logger
}

// ConsumeOptions configures RunConsume (pulsar-perf consume flags).
type ConsumeOptions struct {
	ServiceURL       string
	Topics           []string
	Subscription     string
	SubscriptionType pulsar.SubscriptionType
	Consumers        int // per topic
	ReceiverQueue    int
	NumMessages      int64
	Duration         time.Duration
	Interval         time.Duration
	Progress         io.Writer
	Logger           *slog.Logger
}

// Result is the summary of a run; latencies are in milliseconds (publish latency for
// produce, end-to-end latency for consume).
type Result struct {
	Messages   int64   `json:"messages"`
	Bytes      int64   `json:"bytes"`
	Errors     int64   `json:"errors"`
	Seconds    float64 `json:"seconds"`
	MsgPerSec  float64 `json:"msgPerSec"`
	MbitPerSec float64 `json:"mbitPerSec"`
	Mean       float64 `json:"latencyMeanMs"`
	P50        float64 `json:"latencyP50Ms"`
	P95        float64 `json:"latencyP95Ms"`
	P99        float64 `json:"latencyP99Ms"`
	P999       float64 `json:"latencyP999Ms"`
	Max        float64 `json:"latencyMaxMs"`
	FirstError string  `json:"firstError,omitempty"`
}

// recorder collects counts and latencies (µs) from client callbacks: a window histogram for
// the periodic lines and a total one for the summary.
type recorder struct {
	mu            sync.Mutex
	window, total *hdrhistogram.Histogram
	wMsgs, wBytes int64
	msgs, bytes   atomic.Int64
	errs          atomic.Int64
	firstErr      atomic.Value
	// first and last record times (UnixNano), for a consumer's active span.
	first, last atomic.Int64
}

func newRecorder() *recorder {
	return &recorder{window: newLatencyHistogram(), total: newLatencyHistogram()}
}

func (r *recorder) record(size int, latency time.Duration) {
	us := max(latency.Microseconds(), 1)
	r.mu.Lock()
	_ = r.window.RecordValue(us)
	_ = r.total.RecordValue(us)
	r.wMsgs++
	r.wBytes += int64(size)
	r.mu.Unlock()
	r.msgs.Add(1)
	r.bytes.Add(int64(size))
	now := time.Now().UnixNano()
	r.first.CompareAndSwap(0, now)
	r.last.Store(now)
}

// active is the span from the first to the last record, or fallback if there were fewer
// than two: a consumer that waited for a producer reports the rate while messages flowed.
func (r *recorder) active(fallback time.Duration) time.Duration {
	if d := time.Duration(r.last.Load() - r.first.Load()); r.msgs.Load() > 1 && d > 0 {
		return d
	}
	return fallback
}

func (r *recorder) fail(err error) {
	r.errs.Add(1)
	r.firstErr.CompareAndSwap(nil, err.Error())
}

// line formats one pulsar-perf style line for the window since the last call.
func (r *recorder) line(verb string, elapsed time.Duration) string {
	r.mu.Lock()
	h, msgs, bytes := r.window, r.wMsgs, r.wBytes
	r.window, r.wMsgs, r.wBytes = newLatencyHistogram(), 0, 0
	r.mu.Unlock()
	s := elapsed.Seconds()
	return fmt.Sprintf("Throughput %s: %10.1f msg/s --- %8.2f Mbit/s --- Latency: mean: %8.3f ms - med: %8.3f - 95pct: %8.3f - 99pct: %8.3f - 99.9pct: %8.3f - Max: %8.3f",
		verb, float64(msgs)/s, float64(bytes)*8/s/1e6, h.Mean()/1000, q(h, 50), q(h, 95), q(h, 99), q(h, 99.9), float64(h.Max())/1000)
}

func q(h *hdrhistogram.Histogram, p float64) float64 { return float64(h.ValueAtQuantile(p)) / 1000 }

func (r *recorder) result(elapsed time.Duration) Result {
	r.mu.Lock()
	h := r.total
	res := Result{Mean: h.Mean() / 1000, P50: q(h, 50), P95: q(h, 95), P99: q(h, 99), P999: q(h, 99.9), Max: float64(h.Max()) / 1000}
	r.mu.Unlock()
	res.Messages, res.Bytes, res.Errors = r.msgs.Load(), r.bytes.Load(), r.errs.Load()
	res.Seconds = elapsed.Seconds()
	if res.Seconds > 0 {
		res.MsgPerSec = float64(res.Messages) / res.Seconds
		res.MbitPerSec = float64(res.Bytes) * 8 / res.Seconds / 1e6
	}
	if e, ok := r.firstErr.Load().(string); ok {
		res.FirstError = e
	}
	return res
}

// progressBar renders n of total as a 20-column bar for runs with a fixed count.
func progressBar(n, total int64) string {
	n = min(n, total)
	full := int(20 * n / total)
	return fmt.Sprintf(" --- [%s%s] %3d%%", strings.Repeat("#", full), strings.Repeat(".", 20-full), 100*n/total)
}

// report prints a line every interval until done is closed; with total > 0 each line ends
// in a progress bar.
func (r *recorder) report(w io.Writer, verb string, interval time.Duration, total int64, done <-chan struct{}) {
	if w == nil || interval <= 0 {
		return
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	last := time.Now()
	for {
		select {
		case <-done:
			return
		case now := <-t.C:
			l := r.line(verb, now.Sub(last))
			if total > 0 {
				l += progressBar(r.msgs.Load(), total)
			}
			fmt.Fprintln(w, l)
			last = now
		}
	}
}

func newClient(url string, logger *slog.Logger) (pulsar.Client, error) {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	// The Go client logs every producer and consumer at info; keep only its warnings.
	l := slog.New(levelFilter{logger.Handler(), slog.LevelWarn})
	return pulsar.NewClient(pulsar.ClientOptions{URL: url, OperationTimeout: 30 * time.Second, Logger: plog.NewLoggerWithSlog(l)})
}

type levelFilter struct {
	slog.Handler
	min slog.Level
}

func (f levelFilter) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= f.min && f.Handler.Enabled(ctx, l)
}

// WithAttrs and WithGroup keep the filter on derived loggers (the client derives one per
// producer and consumer).
func (f levelFilter) WithAttrs(as []slog.Attr) slog.Handler {
	return levelFilter{f.Handler.WithAttrs(as), f.min}
}

func (f levelFilter) WithGroup(name string) slog.Handler {
	return levelFilter{f.Handler.WithGroup(name), f.min}
}

// runContext bounds a run by its duration (0: only ctx).
func runContext(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	if d > 0 {
		return context.WithTimeout(ctx, d)
	}
	return context.WithCancel(ctx)
}

// RunProduce publishes with ProducersPerTopic producers on each topic and records each
// message's publish latency (SendAsync to its receipt).
func RunProduce(ctx context.Context, o ProduceOptions) (Result, error) {
	if len(o.Topics) == 0 || o.ProducersPerTopic < 1 || o.Size < timestampSize || o.Rate < 0 || o.MaxPending < 1 {
		return Result{}, fmt.Errorf("%w: need topics, producers >= 1, size >= %d, rate >= 0, max pending >= 1", ErrBadOptions, timestampSize)
	}
	client, err := newClient(o.ServiceURL, o.Logger)
	if err != nil {
		return Result{}, err
	}
	defer client.Close()
	var producers []pulsar.Producer
	defer func() {
		for _, p := range producers {
			p.Close()
		}
	}()
	for _, topic := range o.Topics {
		for range o.ProducersPerTopic {
			p, err := client.CreateProducer(pulsar.ProducerOptions{
				Topic: topic, DisableBatching: o.BatchingDisabled, BatchingMaxPublishDelay: o.BatchDelay,
				BatchingMaxMessages: uint(o.BatchMaxMessages), BatchingMaxSize: uint(o.BatchMaxBytes),
				MaxPendingMessages: o.MaxPending, SendTimeout: 60 * time.Second,
			})
			if err != nil {
				return Result{}, fmt.Errorf("perf: producer on %s: %w", topic, err)
			}
			producers = append(producers, p)
		}
	}
	rec := newRecorder()
	runCtx, cancel := runContext(ctx, o.Duration)
	defer cancel()
	done := make(chan struct{})
	go rec.report(o.Progress, "produced", o.Interval, o.NumMessages, done)
	var sent atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	for _, p := range producers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			produceLoop(runCtx, p, o, len(producers), &sent, rec)
		}()
	}
	wg.Wait()
	for _, p := range producers {
		_ = p.FlushWithCtx(context.WithoutCancel(ctx))
	}
	elapsed := time.Since(start)
	close(done)
	return rec.result(elapsed), nil
}

// pacingSlice is the most a paced producer runs ahead of its schedule before it sleeps.
const pacingSlice = time.Millisecond

// produceLoop sends until the context ends or the shared count is reached, pacing itself
// to its share of the rate by a schedule (not by sleeping a fixed gap, which would drift).
func produceLoop(ctx context.Context, p pulsar.Producer, o ProduceOptions, n int, sent *atomic.Int64, rec *recorder) {
	var period time.Duration
	if o.Rate > 0 {
		period = time.Duration(float64(time.Second) * float64(n) / o.Rate)
	}
	next := time.Now()
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for ctx.Err() == nil {
		if o.NumMessages > 0 && sent.Add(1) > o.NumMessages {
			return
		}
		if period > 0 {
			next = next.Add(period)
			// Sleep only when a whole pacing slice ahead: at 100k+ msg/s the gap between
			// messages is a few µs, far below the timer's resolution, so sleeping per message
			// would fall behind and then burst to catch up, which inflates the latency tail.
			if d := time.Until(next); d >= pacingSlice {
				timer.Reset(d)
				select {
				case <-ctx.Done():
					return
				case <-timer.C:
				}
			}
		}
		payload := make([]byte, o.Size)
		began := time.Now()
		binary.BigEndian.PutUint64(payload, uint64(began.UnixNano()))
		// In-flight sends finish after the run ends so they are counted, not failed.
		p.SendAsync(context.WithoutCancel(ctx), &pulsar.ProducerMessage{Payload: payload}, func(_ pulsar.MessageID, _ *pulsar.ProducerMessage, err error) {
			if err != nil {
				if ctx.Err() == nil {
					rec.fail(err)
				}
				return
			}
			rec.record(o.Size, time.Since(began))
		})
	}
}

// RunConsume subscribes Consumers consumers to each topic and records each message's
// end-to-end latency from the timestamp produce put in its payload.
func RunConsume(ctx context.Context, o ConsumeOptions) (Result, error) {
	if len(o.Topics) == 0 || o.Consumers < 1 || o.Subscription == "" {
		return Result{}, fmt.Errorf("%w: need topics, consumers >= 1 and a subscription", ErrBadOptions)
	}
	client, err := newClient(o.ServiceURL, o.Logger)
	if err != nil {
		return Result{}, err
	}
	defer client.Close()
	rec := newRecorder()
	runCtx, cancel := runContext(ctx, o.Duration)
	defer cancel()
	var consumers []pulsar.Consumer
	defer func() {
		for _, c := range consumers {
			c.Close()
		}
	}()
	for _, topic := range o.Topics {
		for range o.Consumers {
			c, err := client.Subscribe(pulsar.ConsumerOptions{Topic: topic, SubscriptionName: o.Subscription,
				Type: o.SubscriptionType, ReceiverQueueSize: o.ReceiverQueue})
			if err != nil {
				return Result{}, fmt.Errorf("perf: consumer on %s: %w", topic, err)
			}
			consumers = append(consumers, c)
		}
	}
	done := make(chan struct{})
	go rec.report(o.Progress, "received", o.Interval, o.NumMessages, done)
	var got atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	for _, c := range consumers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				m, err := c.Receive(runCtx)
				if err != nil {
					if runCtx.Err() == nil {
						rec.fail(err)
					}
					return
				}
				pl := m.Payload()
				lat := time.Duration(0)
				if len(pl) >= timestampSize {
					if ts := int64(binary.BigEndian.Uint64(pl)); ts > 0 && ts < math.MaxInt64 {
						lat = time.Since(time.Unix(0, ts))
					}
				}
				rec.record(len(pl), lat)
				c.AckID(m.ID())
				if o.NumMessages > 0 && got.Add(1) >= o.NumMessages {
					cancel()
					return
				}
			}
		}()
	}
	wg.Wait()
	elapsed := rec.active(time.Since(start))
	close(done)
	return rec.result(elapsed), nil
}

// TopicNames is pulsar-perf's naming of --num-topics: the name itself for one topic, else
// name-0 ... name-(n-1).
func TopicNames(name string, n int) []string {
	if n <= 1 {
		return []string{name}
	}
	out := make([]string, n)
	for i := range out {
		out[i] = name + "-" + strconv.Itoa(i)
	}
	return out
}
