package topics

import (
	"sync/atomic"
	"time"
)

// latencyBoundsMs are Pulsar's storage write latency buckets (ms): an entry counts in the
// first bucket whose bound is at least its latency, or in "overflow" past the last.
var latencyBoundsMs = [...]float64{0.5, 1, 5, 10, 20, 50, 100, 200, 1000}

// latencyBucketNames name the buckets as Pulsar's pulsar_storage_write_latency_le_* series.
var latencyBucketNames = [len(latencyBoundsMs) + 1]string{
	"le_0_5", "le_1", "le_5", "le_10", "le_20", "le_50", "le_100", "le_200", "le_1000", "overflow",
}

// latencyBuckets counts a topic's storage write latencies with atomics: one add per
// entry on the publish path, read at scrape time.
type latencyBuckets struct {
	counts    [len(latencyBoundsMs) + 1]atomic.Int64
	sumMicros atomic.Int64
}

func (b *latencyBuckets) observe(d time.Duration) {
	ms := float64(d) / float64(time.Millisecond)
	i := 0
	for i < len(latencyBoundsMs) && ms > latencyBoundsMs[i] {
		i++
	}
	b.counts[i].Add(1)
	b.sumMicros.Add(d.Microseconds())
}

// latencySnapshot is latencyBuckets read at one moment (sums of several for a namespace).
type latencySnapshot struct {
	counts    [len(latencyBoundsMs) + 1]int64
	sumMicros int64
}

func (b *latencyBuckets) snapshot() latencySnapshot {
	var s latencySnapshot
	for i := range b.counts {
		s.counts[i] = b.counts[i].Load()
	}
	s.sumMicros = b.sumMicros.Load()
	return s
}

func (s *latencySnapshot) add(o *latencySnapshot) {
	for i := range s.counts {
		s.counts[i] += o.counts[i]
	}
	s.sumMicros += o.sumMicros
}

func (s *latencySnapshot) count() int64 {
	var n int64
	for _, c := range s.counts {
		n += c
	}
	return n
}

// observePublish records one stored entry's latency from its SEND being handed to the
// topic (after any publish throttling), for the topic's buckets and the broker's histogram.
// Non-persistent topics store nothing and are not counted.
func (t *Topic) observePublish(start time.Time) {
	if t.log == nil {
		return
	}
	d := time.Since(start)
	t.counters.writeLatency.observe(d)
	t.s.m.publishLatency.Observe(float64(d) / float64(time.Millisecond))
}
