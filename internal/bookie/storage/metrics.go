package storage

import (
	"errors"
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
	limboLedgers   prometheus.Gauge
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
		limboLedgers: prometheus.NewGauge(prometheus.GaugeOpts{Name: "bookie_ledgers_in_limbo",
			Help: "Ledgers in limbo after journal damage, as of the last start (see disk_limbo.go)."}),
	}
	if reg != nil {
		// A storage reopened in the same process (a restarted bookie in standalone or in
		// tests) takes over the collectors registered by the one before it.
		var err error
		regs := []func() error{
			func() error { m.addLatency, err = register(reg, m.addLatency); return err },
			func() error { m.readLatency, err = register(reg, m.readLatency); return err },
			func() error { m.syncLatency, err = register(reg, m.syncLatency); return err },
			func() error { m.groupEntries, err = register(reg, m.groupEntries); return err },
			func() error { m.journalBytes, err = register(reg, m.journalBytes); return err },
			func() error { m.writeCache, err = register(reg, m.writeCache); return err },
			func() error { m.readCache, err = register(reg, m.readCache); return err },
			func() error { m.readCacheHits, err = register(reg, m.readCacheHits); return err },
			func() error { m.readCacheMiss, err = register(reg, m.readCacheMiss); return err },
			func() error { m.flushLatency, err = register(reg, m.flushLatency); return err },
			func() error { m.flushBytes, err = register(reg, m.flushBytes); return err },
			func() error { m.serverStatus, err = register(reg, m.serverStatus); return err },
			func() error { m.logsRemoved, err = register(reg, m.logsRemoved); return err },
			func() error { m.compactedBytes, err = register(reg, m.compactedBytes); return err },
			func() error { m.replayed, err = register(reg, m.replayed); return err },
			func() error { m.journalTorn, err = register(reg, m.journalTorn); return err },
			func() error { m.limboLedgers, err = register(reg, m.limboLedgers); return err },
		}
		for _, r := range regs {
			if err := r(); err != nil {
				return nil, fmt.Errorf("storage: register metrics: %w", err)
			}
		}
	}
	m.serverStatus.Set(1)
	return m, nil
}

// register registers c, or returns the collector of the same description already there.
func register[T prometheus.Collector](reg prometheus.Registerer, c T) (T, error) {
	err := reg.Register(c)
	var are prometheus.AlreadyRegisteredError
	if errors.As(err, &are) {
		if existing, ok := are.ExistingCollector.(T); ok {
			return existing, nil
		}
	}
	return c, err
}
