package cli

import (
	"context"
	"log/slog"
	"math"
	"runtime/debug"
	"runtime/metrics"
	"strings"
	"time"
)

// codeReserve is the part of a process's resident memory the Go runtime does not count
// against its memory limit: file-backed pages, mostly the executable's code and read-only
// data (42 MiB resident in a busy bookie, /proc/<pid>/status RssFile), plus a few MiB for
// what Pebble allocates outside the Go heap (cgo). The bookie's limit leaves room for them
// so its whole RSS, not only its heap, stays within the caches plus memoryHeadroom: with
// 40 MiB the peak was 202-207 MiB against the 200 MiB bound, with 48 MiB 189 MiB.
const codeReserve = 48 << 20

// applyGCPercent sets the garbage collector's target to percent unless it is 0 or GOGC is
// set in environ (the operator's value wins).
func applyGCPercent(percent int, environ []string, logger *slog.Logger) {
	if percent == 0 || envSet(environ, "GOGC") {
		return
	}
	debug.SetGCPercent(percent)
	logger.Debug("garbage collector target", "percent", percent)
}

// envSet reports whether environ (os.Environ's form) sets name.
func envSet(environ []string, name string) bool {
	for _, kv := range environ {
		if strings.HasPrefix(kv, name+"=") {
			return true
		}
	}
	return false
}

// The soft memory limit bounds what the caches may add to the heap, but part of the live
// heap grows with the work instead: every open topic, subscription, producer and consumer
// costs a few KiB, and their goroutines' stacks count against the limit too. At 10,000
// topics with a producer and a consumer each the standalone held ~150 MiB of live heap and
// ~40 MiB of stacks against a 208 MiB limit: the runtime collected back to back (5-6 cycles
// a second, next_gc pinned at the heap size) and the garbage collector's CPU limiter, not the
// work, set the rate: most of the broker's CPU was marking (docs/bench-compare-scaling.md).
// So a governor raises the limit whenever what the last collection left live plus a minimum
// slack no longer fits under it, and lowers it back to the configured value when that state
// goes away. With the slack at half the collector target (GOGC/2 percent of the live heap),
// the limit never makes collections more than twice as frequent as GOGC alone would, and it
// still binds where it was meant to: a heap that is mostly bounded caches.

// memoryGovernorInterval is how often the governor looks at the last collection's numbers;
// a collection every few hundred milliseconds already means the limit is too tight.
const memoryGovernorInterval = 250 * time.Millisecond

// memSample is what limitFloor needs from runtime/metrics, in bytes (gcPercent in percent).
type memSample struct {
	live      uint64 // live heap marked by the last collection
	unused    uint64 // heap spans' space that no object uses (fragmentation)
	nonHeap   uint64 // everything mapped that is not heap spans: stacks, runtime metadata, ...
	gcPercent int64
}

// limitFloor is the soft memory limit for a process whose configured limit is base: base,
// or the memory that stays in use after a collection (live heap, its spans' fragmentation,
// stacks and the runtime's own) plus half the collector's slack when that is more.
func limitFloor(base int64, s memSample) int64 {
	gc := s.gcPercent
	if gc <= 0 {
		gc = 100 // GOGC=off still collects at the limit; take Go's default slack
	}
	need := s.nonHeap + s.unused + s.live + s.live*uint64(gc)/200
	if need > math.MaxInt64 || int64(need) <= base {
		return base
	}
	return int64(need)
}

var memoryMetrics = []string{
	"/gc/heap/live:bytes",
	"/gc/gogc:percent",
	"/memory/classes/total:bytes",
	"/memory/classes/heap/released:bytes",
	"/memory/classes/heap/objects:bytes",
	"/memory/classes/heap/unused:bytes",
	"/memory/classes/heap/free:bytes",
}

// readMemSample reads the runtime's numbers into a memSample; samples is memoryMetrics'
// []metrics.Sample (reused between calls).
func readMemSample(samples []metrics.Sample) memSample {
	metrics.Read(samples)
	v := func(i int) uint64 {
		if samples[i].Value.Kind() != metrics.KindUint64 {
			return 0
		}
		return samples[i].Value.Uint64()
	}
	heap := v(3) + v(4) + v(5) + v(6)
	var nonHeap uint64
	if t := v(2); t > heap {
		nonHeap = t - heap
	}
	return memSample{live: v(0), unused: v(5), nonHeap: nonHeap, gcPercent: int64(v(1))}
}

// applyMemoryLimit sets the Go runtime's soft memory limit to limit bytes, and keeps it above
// the live heap until ctx ends (limitFloor), unless GOMEMLIMIT is set in environ (the
// operator's value wins, as it is).
func applyMemoryLimit(ctx context.Context, limit int64, environ []string, logger *slog.Logger) {
	if envSet(environ, "GOMEMLIMIT") {
		return
	}
	debug.SetMemoryLimit(limit)
	logger.Debug("soft memory limit", "bytes", limit)
	go governMemoryLimit(ctx, limit, memoryGovernorInterval, logger)
}

// governMemoryLimit moves the soft memory limit between base and limitFloor every interval
// until ctx ends.
func governMemoryLimit(ctx context.Context, base int64, interval time.Duration, logger *slog.Logger) {
	samples := make([]metrics.Sample, len(memoryMetrics))
	for i, name := range memoryMetrics {
		samples[i].Name = name
	}
	cur := base
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		want := limitFloor(base, readMemSample(samples))
		// Moves of less than 1/16 are not worth a log line or a change of the collector's
		// pacing; a move back to base always is.
		if want == cur || (want != base && abs64(want-cur) < cur/16) {
			continue
		}
		debug.SetMemoryLimit(want)
		logger.Info("soft memory limit moved with the live heap", "bytes", want, "configured", base)
		cur = want
	}
}

func abs64(x int64) int64 {
	if x < 0 {
		return -x
	}
	return x
}
