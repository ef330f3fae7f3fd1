package perf

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/magnetar-io/magnetar/internal/bookieproto"
)

// BookieOptions configures RunBookie.
type BookieOptions struct {
	Addr      string        // bookie host:port
	InFlight  int           // adds outstanding at any time
	EntrySize int           // payload bytes per add
	Duration  time.Duration // how long to add
	LedgerID  int64         // ledger to write; 0 picks a random one
	Timeout   time.Duration // per-add timeout
	// Interval prints a progress line this often to Progress (0: no progress lines).
	Interval time.Duration
	Progress io.Writer
	Logger   *slog.Logger
}

// BookieResult is what one run measured. Latencies are in microseconds.
type BookieResult struct {
	Adds, Errors         int64
	Elapsed              time.Duration
	AddsPerSec, MBPerSec float64
	P50, P99, P999, Max  int64
	FirstError           error
}

// ErrAllFailed is returned when no add succeeded.
var ErrAllFailed = errors.New("perf: every add failed")

// histogram bounds: 1 µs to 60 s at 3 significant digits.
func newLatencyHistogram() *hdrhistogram.Histogram { return hdrhistogram.New(1, 60_000_000, 3) }

// RunBookie adds entries of opts.EntrySize to one ledger with opts.InFlight adds outstanding
// until opts.Duration has passed, then waits for the last ones.
func RunBookie(ctx context.Context, opts BookieOptions) (BookieResult, error) {
	if opts.InFlight < 1 || opts.EntrySize < 0 || opts.Duration <= 0 {
		return BookieResult{}, fmt.Errorf("perf: need in-flight >= 1, size >= 0, duration > 0 (got %d, %d, %v)", opts.InFlight, opts.EntrySize, opts.Duration)
	}
	if opts.LedgerID == 0 {
		var b [8]byte
		_, _ = rand.Read(b[:])
		opts.LedgerID = int64(binary.BigEndian.Uint64(b[:])>>2) + 1
	}
	client := bookieproto.NewClient(bookieproto.ClientOptions{Logger: opts.Logger, RequestTimeout: opts.Timeout})
	defer client.Close()
	payload := make([]byte, opts.EntrySize)
	_, _ = rand.Read(payload)
	key := []byte("magnetar-perf")

	var (
		mu       sync.Mutex
		total    = newLatencyHistogram()
		window   = newLatencyHistogram()
		errs     int64
		firstErr error
		acked    atomic.Int64 // adds complete in order, so this is also the contiguous LAC + 1
	)
	sem := make(chan struct{}, opts.InFlight)
	start := time.Now()
	deadline := start.Add(opts.Duration)
	var ticker <-chan time.Time
	if opts.Interval > 0 && opts.Progress != nil {
		t := time.NewTicker(opts.Interval)
		defer t.Stop()
		ticker = t.C
	}
	lastTick, lastCount := start, int64(0)
	entry := int64(0)
	for ctx.Err() == nil && time.Now().Before(deadline) {
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
			continue
		case now := <-ticker:
			mu.Lock()
			n := total.TotalCount()
			line := fmt.Sprintf("%8.0f adds/s  p50 %6.2f ms  p99 %6.2f ms  errors %d\n",
				float64(n-lastCount)/now.Sub(lastTick).Seconds(),
				float64(window.ValueAtQuantile(50))/1000, float64(window.ValueAtQuantile(99))/1000, errs)
			window.Reset()
			mu.Unlock()
			_, _ = io.WriteString(opts.Progress, line)
			lastTick, lastCount = now, n
			continue
		}
		t0 := time.Now()
		client.AddEntry(ctx, opts.Addr, bookieproto.AddRequest{
			LedgerID: opts.LedgerID, EntryID: entry, MasterKey: key, LAC: acked.Load() - 1, Payload: payload,
		}, func(err error) {
			us := time.Since(t0).Microseconds()
			mu.Lock()
			if err != nil {
				errs++
				if firstErr == nil {
					firstErr = err
				}
			} else {
				_ = total.RecordValue(us)
				_ = window.RecordValue(us)
				acked.Add(1)
			}
			mu.Unlock()
			<-sem
		})
		entry++
	}
	for i := 0; i < opts.InFlight; i++ { // wait for the adds still in flight
		sem <- struct{}{}
	}
	elapsed := time.Since(start)
	mu.Lock()
	defer mu.Unlock()
	r := BookieResult{
		Adds: total.TotalCount(), Errors: errs, Elapsed: elapsed, FirstError: firstErr,
		P50: total.ValueAtQuantile(50), P99: total.ValueAtQuantile(99), P999: total.ValueAtQuantile(99.9), Max: total.Max(),
	}
	r.AddsPerSec = float64(r.Adds) / elapsed.Seconds()
	r.MBPerSec = r.AddsPerSec * float64(opts.EntrySize) / (1 << 20)
	if r.Adds == 0 && errs > 0 {
		return r, fmt.Errorf("%w: %w", ErrAllFailed, firstErr)
	}
	return r, nil
}
