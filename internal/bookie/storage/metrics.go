package storage

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
)

// metrics are the storage's Prometheus metrics, named after BookKeeper's bookie_* stats
// (bookie_journal_JOURNAL_SYNC -> bookie_journal_sync_latency_seconds, and so on).
type metrics struct {
	addLatency     prometheus.Histogram
	readLatency    prometheus.Histogram
	syncLatency    prometheus.Histogram
	groupEntries   prometheus.Histogram
	journalBytes   prometheus.Counter
	writeCache     prometheus.Gauge
	readCache      prometheus.Gauge
	readCacheHits  prometheus.Counter
	readCacheMiss  prometheus.Counter
	flushLatency   prometheus.Histogram
	flushBytes     prometheus.Counter
	serverStatus   prometheus.Gauge
	logsRemoved    prometheus.Counter
	compactedBytes prometheus.Counter
	replayed       prometheus.Counter
	journalTorn    prometheus.Counter
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	lat := prometheus.ExponentialBuckets(50e-6, 2, 16) // 50us .. ~1.6s
	m := &metrics{
		addLatency: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "bookie_add_entry_latency_seconds",
			Help: "Time from AddEntry to its acknowledgement (journal fsync included).", Buckets: lat}),
		readLatency: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "bookie_read_entry_latency_seconds",
			Help: "Time to read one entry.", Buckets: lat}),
		syncLatency: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "bookie_journal_sync_latency_seconds",
			Help: "Journal fdatasync latency (one per group commit).", Buckets: lat}),
		groupEntries: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "bookie_journal_force_write_grouping_count",
			Help: "Journal records per group commit (entries per fsync).", Buckets: prometheus.ExponentialBuckets(1, 2, 14)}),
		journalBytes: prometheus.NewCounter(prometheus.CounterOpts{Name: "bookie_journal_write_bytes_total",
			Help: "Bytes written to the journal."}),
		writeCache: prometheus.NewGauge(prometheus.GaugeOpts{Name: "bookie_write_cache_size_bytes",
			Help: "Bytes held by the write cache (both halves)."}),
		readCache: prometheus.NewGauge(prometheus.GaugeOpts{Name: "bookie_read_cache_size_bytes",
			Help: "Bytes held by the read cache."}),
		readCacheHits: prometheus.NewCounter(prometheus.CounterOpts{Name: "bookie_read_cache_hits_total",
			Help: "Reads served by the read cache."}),
		readCacheMiss: prometheus.NewCounter(prometheus.CounterOpts{Name: "bookie_read_cache_misses_total",
			Help: "Reads that went to the entry log."}),
		flushLatency: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "bookie_flush_latency_seconds",
			Help: "Time to flush one write-cache generation (entry log, fsync, index).", Buckets: prometheus.ExponentialBuckets(1e-3, 2, 14)}),
		flushBytes: prometheus.NewCounter(prometheus.CounterOpts{Name: "bookie_flush_size_bytes_total",
			Help: "Payload bytes flushed to entry logs."}),
		serverStatus: prometheus.NewGauge(prometheus.GaugeOpts{Name: "bookie_server_status",
			Help: "1 when the bookie accepts adds, 0 when it is read-only."}),
		logsRemoved: prometheus.NewCounter(prometheus.CounterOpts{Name: "bookie_gc_entry_logs_removed_total",
			Help: "Entry logs removed by garbage collection or compaction."}),
		compactedBytes: prometheus.NewCounter(prometheus.CounterOpts{Name: "bookie_gc_compacted_bytes_total",
			Help: "Live bytes copied by compaction."}),
		replayed: prometheus.NewCounter(prometheus.CounterOpts{Name: "bookie_journal_replayed_records_total",
			Help: "Journal records replayed at startup."}),
		journalTorn: prometheus.NewCounter(prometheus.CounterOpts{Name: "bookie_journal_torn_files_total",
			Help: "Journal files whose replay ended at a torn or corrupt record."}),
	}
	m.serverStatus.Set(1)
	if reg != nil {
		for _, c := range []prometheus.Collector{m.addLatency, m.readLatency, m.syncLatency, m.groupEntries,
			m.journalBytes, m.writeCache, m.readCache, m.readCacheHits, m.readCacheMiss, m.flushLatency,
			m.flushBytes, m.serverStatus, m.logsRemoved, m.compactedBytes, m.replayed, m.journalTorn} {
			if err := reg.Register(c); err != nil {
				return nil, fmt.Errorf("storage: register metrics: %w", err)
			}
		}
	}
	return m, nil
}
