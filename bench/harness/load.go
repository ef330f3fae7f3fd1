package harness

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
)

// epoch is the shared time base of payload timestamps (one process, monotonic clock).
var epoch = time.Now()

func nowNs() int64 { return int64(time.Since(epoch)) }

// filler is shared pseudo-random payload content (no system compresses, but keep it honest).
var filler = func() []byte {
	b := make([]byte, 1<<20)
	r := rand.New(rand.NewPCG(1, 2))
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}()

const tsLen = 8

func makePayload(size int, ts int64, seq uint64) []byte {
	if size < tsLen {
		size = tsLen
	}
	b := make([]byte, size)
	binary.LittleEndian.PutUint64(b, uint64(ts))
	off := int(seq*64) % (len(filler) - size)
	copy(b[tsLen:], filler[off:])
	return b
}

func payloadTs(b []byte) (int64, bool) {
	if len(b) < tsLen {
		return 0, false
	}
	return int64(binary.LittleEndian.Uint64(b)), true
}

func newHist() *hdrhistogram.Histogram {
	// 1 µs .. 10 min, 3 significant digits, in µs.
	return hdrhistogram.New(1, 600_000_000, 3)
}

// window marks the measurement interval in ns since epoch; zero end = still open.
type window struct{ start, end atomic.Int64 }

func (w *window) in(t int64) bool {
	s, e := w.start.Load(), w.end.Load()
	return s != 0 && t >= s && (e == 0 || t < e)
}

// recorder collects one side (producers or consumers) under a mutex; hdrhistogram is not
// safe for concurrent use and callbacks come from client goroutines.
type recorder struct {
	mu    sync.Mutex
	hist  *hdrhistogram.Histogram
	count int64
	bytes int64
	total atomic.Int64 // all events, in or out of the window
	errs  atomic.Int64
	last  atomic.Value // last error
}

func newRecorder() *recorder { return &recorder{hist: newHist()} }

func (r *recorder) record(w *window, at int64, latencyNs int64, size int) {
	r.total.Add(1)
	if !w.in(at) {
		return
	}
	us := latencyNs / 1000
	if us < 1 {
		us = 1
	}
	r.mu.Lock()
	_ = r.hist.RecordValue(us) // values beyond the range are dropped, never fatal
	r.count++
	r.bytes += int64(size)
	r.mu.Unlock()
}

func (r *recorder) fail(err error) {
	r.errs.Add(1)
	r.last.Store(err.Error())
}

// LoadResult is what the generator measured in one block.
type LoadResult struct {
	PubCount, PubBytes int64
	ConsCount          int64
	PubHist, E2EHist   *hdrhistogram.Histogram
	Errors             int64
	LastError          string
	// Catch-up variants only.
	CatchupMsgs    int64
	CatchupSeconds float64
	// SetupSeconds is the time to create the stream/topics, consumers and producers.
	SetupSeconds float64
	Note         string
}

// loadGen drives one block. It owns the producers' pacing and the window semaphores.
type loadGen struct {
	spec  Spec
	drv   Driver
	base  string
	win   window
	pub   *recorder
	e2e   *recorder
	limit int
	// rate per producer in msg/s; 0 = closed loop.
	rate float64
}

func newLoadGen(spec Spec, drv Driver, base string, windowSize int, rate float64) *loadGen {
	return &loadGen{spec: spec, drv: drv, base: base, pub: newRecorder(), e2e: newRecorder(), limit: windowSize, rate: rate}
}

// produce runs one producer until ctx ends or maxMsgs (>0) messages were acknowledged.
func (g *loadGen) produce(ctx context.Context, p Producer, parts []int, rate float64, maxMsgs int64) error {
	sem := make(chan struct{}, g.limit)
	var acked atomic.Int64
	var wg sync.WaitGroup
	size := g.spec.MsgSize
	var seq uint64
	send := func(ts int64) error {
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
			return ctx.Err()
		}
		part := parts[int(seq)%len(parts)]
		payload := makePayload(size, ts, seq)
		seq++
		wg.Add(1)
		err := p.Publish(part, payload, func(err error) {
			now := nowNs()
			if err != nil {
				g.pub.fail(err)
			} else {
				g.pub.record(&g.win, now, now-ts, size)
				acked.Add(1)
			}
			<-sem
			wg.Done()
		})
		if err != nil {
			wg.Done()
			<-sem
			g.pub.fail(err)
			if ctx.Err() != nil {
				return ctx.Err()
			}
			time.Sleep(10 * time.Millisecond) // do not spin on a refusing client
		}
		return nil
	}
	var err error
	if rate <= 0 {
		for err == nil && ctx.Err() == nil && (maxMsgs <= 0 || int64(seq) < maxMsgs) {
			err = send(nowNs())
		}
	} else {
		// Open loop: message i is due at start + i/rate; it carries its due time, so waiting
		// for a full window counts against the system under test.
		interval := float64(time.Second) / rate
		// A random phase: producers that start together at one message a second would
		// otherwise all send in the same instant, every second.
		start := nowNs() + rand.Int64N(int64(interval)+1)
		for err == nil && ctx.Err() == nil && (maxMsgs <= 0 || int64(seq) < maxMsgs) {
			due := start + int64(float64(seq)*interval)
			if now := nowNs(); due > now {
				// Sleep until the message is due: 10,000 producers of one message a second
				// each must not wake every millisecond.
				t := time.NewTimer(time.Duration(due - now))
				select {
				case <-t.C:
				case <-ctx.Done():
					t.Stop()
				}
				continue
			}
			err = send(due)
		}
	}
	fctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if ferr := p.Flush(fctx); ferr != nil {
		g.pub.fail(ferr)
	}
	waitGroup(&wg, 30*time.Second)
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		err = nil
	}
	return err
}

func (g *loadGen) consume(ctx context.Context, c Consumer, count *atomic.Int64) error {
	err := c.Run(ctx, func(b []byte) {
		now := nowNs()
		if ts, ok := payloadTs(b); ok {
			g.e2e.record(&g.win, now, now-ts, len(b))
		}
		if count != nil {
			count.Add(1)
		}
	})
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return nil
	}
	return err
}

func waitGroup(wg *sync.WaitGroup, d time.Duration) bool {
	ch := make(chan struct{})
	go func() { wg.Wait(); close(ch) }()
	select {
	case <-ch:
		return true
	case <-time.After(d):
		return false
	}
}

// hooks let the runner sample server counters exactly at the window edges.
type hooks struct {
	onStart func()
	onEnd   func()
}

// Run executes the block: steady-state variants warm up and measure; catch-up variants build
// a backlog, optionally drop caches, then drain it while publishing.
func (g *loadGen) Run(ctx context.Context, h hooks, dropCaches func() string) (LoadResult, error) {
	setupStart := time.Now()
	if err := g.drv.Prepare(ctx, g.base, g.spec.Partitions); err != nil {
		return LoadResult{}, fmt.Errorf("prepare: %w", err)
	}
	if g.spec.BacklogBytes > 0 {
		return g.runCatchup(ctx, h, dropCaches)
	}
	rctx, stop := context.WithCancel(ctx)
	defer stop()
	errc := make(chan error, g.spec.Producers+g.spec.Consumers*g.spec.Subs)
	var cwg, pwg sync.WaitGroup
	// Clients are created setupParallelism at a time: the scaling workloads open thousands.
	nc := g.spec.Subs * g.spec.Consumers
	consumers := make([]Consumer, nc)
	err := forEachParallel(nc, setupParallelism, func(k int) error {
		s, i := k/g.spec.Consumers, k%g.spec.Consumers
		c, err := g.drv.NewConsumer(ctx, g.base, fmt.Sprintf("sub%d-c%d", s, i), assign(g.spec.Partitions, g.spec.Consumers, i))
		consumers[k] = c
		return err
	})
	consumers = slices.DeleteFunc(consumers, func(c Consumer) bool { return c == nil })
	if err != nil {
		closeAll(consumers)
		return LoadResult{}, fmt.Errorf("consumer: %w", err)
	}
	defer closeAll(consumers)
	cctx, cstop := context.WithCancel(ctx)
	defer cstop()
	for _, c := range consumers {
		cwg.Add(1)
		go func() { defer cwg.Done(); errc <- g.consume(cctx, c, nil) }()
	}
	producers := make([]Producer, g.spec.Producers)
	err = forEachParallel(len(producers), setupParallelism, func(i int) error {
		p, err := g.drv.NewProducer(ctx, g.base, assign(g.spec.Partitions, g.spec.Producers, i), ProducerOpts{NoBatching: g.spec.NoBatching})
		producers[i] = p
		return err
	})
	if err != nil {
		closeAll(slices.DeleteFunc(producers, func(p Producer) bool { return p == nil }))
		return LoadResult{}, fmt.Errorf("producer: %w", err)
	}
	defer closeAll(producers)
	setup := time.Since(setupStart).Seconds()
	perProducer := g.rate / float64(len(producers))
	for i, p := range producers {
		pwg.Add(1)
		go func() {
			defer pwg.Done()
			errc <- g.produce(rctx, p, assign(g.spec.Partitions, g.spec.Producers, i), perProducer, 0)
		}()
	}
	sleepCtx(ctx, g.spec.Warmup)
	g.win.start.Store(nowNs())
	h.onStart()
	sleepCtx(ctx, g.spec.Measure)
	g.win.end.Store(nowNs())
	h.onEnd()
	stop()
	waitGroup(&pwg, 60*time.Second)
	// Let consumers catch the tail so e2e includes the window's last messages.
	sleepCtx(ctx, 500*time.Millisecond)
	cstop()
	waitGroup(&cwg, 10*time.Second)
	res := g.result(errc)
	res.SetupSeconds = setup
	return res, nil
}

func (g *loadGen) runCatchup(ctx context.Context, h hooks, dropCaches func() string) (LoadResult, error) {
	backlog := g.spec.BacklogBytes / int64(g.spec.MsgSize)
	p, err := g.drv.NewProducer(ctx, g.base, assign(g.spec.Partitions, 1, 0), ProducerOpts{NoBatching: g.spec.NoBatching})
	if err != nil {
		return LoadResult{}, fmt.Errorf("producer: %w", err)
	}
	defer p.Close()
	// Phase 1: build the backlog at max rate; nothing is recorded (window not open).
	if err := g.produce(ctx, p, []int{0}, 0, backlog); err != nil {
		return LoadResult{}, fmt.Errorf("backlog: %w", err)
	}
	if n := g.pub.errs.Load(); n > 0 {
		return LoadResult{}, fmt.Errorf("backlog: %d publish errors, last: %v", n, g.pub.last.Load())
	}
	note := dropCaches()
	c, err := g.drv.NewConsumer(ctx, g.base, "catchup", []int{0})
	if err != nil {
		return LoadResult{}, fmt.Errorf("consumer: %w", err)
	}
	defer c.Close()
	// Phase 2: drain from earliest while publishing at CatchupRate; the window is the drain.
	g.win.start.Store(nowNs())
	h.onStart()
	start := time.Now()
	var got atomic.Int64
	errc := make(chan error, 2)
	pctx, pstop := context.WithCancel(ctx)
	defer pstop()
	var pwg sync.WaitGroup
	if g.spec.CatchupRate > 0 {
		pwg.Add(1)
		go func() { defer pwg.Done(); errc <- g.produce(pctx, p, []int{0}, g.spec.CatchupRate, 0) }()
	}
	cctx, cstop := context.WithCancel(ctx)
	defer cstop()
	var cwg sync.WaitGroup
	cwg.Add(1)
	go func() { defer cwg.Done(); errc <- g.consume(cctx, c, &got) }()
	deadline := time.Now().Add(10 * time.Minute)
	for got.Load() < backlog && time.Now().Before(deadline) && ctx.Err() == nil {
		time.Sleep(5 * time.Millisecond)
	}
	elapsed := time.Since(start).Seconds()
	g.win.end.Store(nowNs())
	h.onEnd()
	pstop()
	waitGroup(&pwg, 30*time.Second)
	cstop()
	waitGroup(&cwg, 10*time.Second)
	res := g.result(errc)
	res.CatchupMsgs = min(got.Load(), backlog)
	res.CatchupSeconds = elapsed
	res.Note = note
	if got.Load() < backlog {
		res.Note += fmt.Sprintf("; drained only %d of %d messages", got.Load(), backlog)
	}
	return res, nil
}

func (g *loadGen) result(errc chan error) LoadResult {
	res := LoadResult{PubHist: g.pub.hist, E2EHist: g.e2e.hist}
	g.pub.mu.Lock()
	res.PubCount, res.PubBytes = g.pub.count, g.pub.bytes
	g.pub.mu.Unlock()
	g.e2e.mu.Lock()
	res.ConsCount = g.e2e.count
	g.e2e.mu.Unlock()
	res.Errors = g.pub.errs.Load() + g.e2e.errs.Load()
	if v, ok := g.pub.last.Load().(string); ok {
		res.LastError = v
	}
	for len(errc) > 0 {
		if err := <-errc; err != nil {
			res.Errors++
			res.LastError = err.Error()
		}
	}
	return res
}

// setupParallelism bounds the clients, producers and consumers created at once.
const setupParallelism = 16

// forEachParallel runs f(0..n-1), at most par at a time, and returns the first error (the
// others still finish).
func forEachParallel(n, par int, f func(i int) error) error {
	var wg sync.WaitGroup
	var once sync.Once
	var first error
	sem := make(chan struct{}, par)
	for i := 0; i < n; i++ {
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			if err := f(i); err != nil {
				once.Do(func() { first = err })
			}
		}()
	}
	wg.Wait()
	return first
}

func closeAll[T interface{ Close() }](xs []T) {
	for _, x := range xs {
		x.Close()
	}
}

func sleepCtx(ctx context.Context, d time.Duration) {
	if d <= 0 {
		return
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}
