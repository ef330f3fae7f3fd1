package perf

import (
	"crypto/rand"
	"fmt"
	"os"
	"time"
)

// ProbeResult is the raw disk's write+fdatasync rate. Latencies are in microseconds.
type ProbeResult struct {
	BlockSize             int
	Syncs                 int64
	Elapsed               time.Duration
	SyncsPerSec, MBPerSec float64
	P50, P99              int64
}

// probeFileSize is the preallocated file the probe overwrites in a loop; like the journal's
// preallocation it keeps fdatasync from also writing a file-size change.
const probeFileSize = 64 << 20

// ProbeSync writes blockSize bytes and fdatasyncs, sequentially, for duration, in a
// preallocated file in dir (removed afterwards): the best a journal on that disk can do
// with one fsync per group of that size.
func ProbeSync(dir string, blockSize int, duration time.Duration) (ProbeResult, error) {
	if blockSize < 1 || blockSize > probeFileSize {
		return ProbeResult{}, fmt.Errorf("perf: probe block size %d out of range 1..%d", blockSize, probeFileSize)
	}
	f, err := os.CreateTemp(dir, "magnetar-probe-*")
	if err != nil {
		return ProbeResult{}, fmt.Errorf("perf: probe file: %w", err)
	}
	defer os.Remove(f.Name())
	defer f.Close()
	zero := make([]byte, 1<<20)
	for off := 0; off < probeFileSize; off += len(zero) {
		if _, err := f.Write(zero); err != nil {
			return ProbeResult{}, fmt.Errorf("perf: preallocating the probe file: %w", err)
		}
	}
	if err := f.Sync(); err != nil {
		return ProbeResult{}, fmt.Errorf("perf: probe fsync: %w", err)
	}
	block := make([]byte, blockSize)
	_, _ = rand.Read(block)
	h := newLatencyHistogram()
	var off int64
	start := time.Now()
	deadline := start.Add(duration)
	for time.Now().Before(deadline) {
		if off+int64(blockSize) > probeFileSize {
			off = 0
		}
		t0 := time.Now()
		if _, err := f.WriteAt(block, off); err != nil {
			return ProbeResult{}, fmt.Errorf("perf: probe write: %w", err)
		}
		if err := fdatasync(f); err != nil {
			return ProbeResult{}, fmt.Errorf("perf: probe fdatasync: %w", err)
		}
		_ = h.RecordValue(time.Since(t0).Microseconds())
		off += int64(blockSize)
	}
	r := ProbeResult{BlockSize: blockSize, Syncs: h.TotalCount(), Elapsed: time.Since(start), P50: h.ValueAtQuantile(50), P99: h.ValueAtQuantile(99)}
	r.SyncsPerSec = float64(r.Syncs) / r.Elapsed.Seconds()
	r.MBPerSec = r.SyncsPerSec * float64(blockSize) / (1 << 20)
	return r, nil
}
