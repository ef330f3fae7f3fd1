package topics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// compactionMetrics are Pulsar's pulsar_compaction_* series, summed over the broker's
// topics (Pulsar labels them per topic; compactions are rare, so the broker total is what
// alerts read).
type compactionMetrics struct {
	removed, succeeded, failed, durationMs prometheus.Counter
}

func newCompactionMetrics() compactionMetrics {
	c := func(name, help string) prometheus.Counter {
		return prometheus.NewCounter(prometheus.CounterOpts{Name: name, Help: help})
	}
	return compactionMetrics{
		removed:    c("pulsar_compaction_removed_event_count", "Messages compaction removed (superseded, deleted or without a key)."),
		succeeded:  c("pulsar_compaction_succeed_count", "Compaction runs that succeeded."),
		failed:     c("pulsar_compaction_failed_count", "Compaction runs that failed."),
		durationMs: c("pulsar_compaction_duration_time_in_mills", "Milliseconds spent in compaction runs."),
	}
}

func (m compactionMetrics) collectors() []prometheus.Collector {
	return []prometheus.Collector{m.removed, m.succeeded, m.failed, m.durationMs}
}

func (m *metrics) compactionDone(ok bool, removed int64, d time.Duration) {
	c := m.compaction
	if ok {
		c.succeeded.Inc()
		c.removed.Add(float64(removed))
	} else {
		c.failed.Inc()
	}
	c.durationMs.Add(float64(d.Milliseconds()))
}
