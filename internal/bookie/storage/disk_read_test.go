package storage_test

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/magnetar-io/magnetar/internal/bookie/storage"
	st "github.com/magnetar-io/magnetar/internal/bookie/storage/storagetest"
	"github.com/magnetar-io/magnetar/internal/bookie/storage/vfs"
)

func TestReadAheadAndMetrics(t *testing.T) {
	cfg := testConfig(t.TempDir())
	cfg.FlushInterval = time.Hour // one flush: each ledger's entries end up adjacent
	reg := prometheus.NewRegistry()
	s, err := storage.OpenWithFS(cfg, vfs.Default(), nil, reg)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for e := int64(0); e < 300; e++ {
		add(t, s, 1, e, st.Payload(1, e, 700))
		add(t, s, 2, e, st.Payload(2, e, 70))
	}
	if err := s.FlushNow(); err != nil {
		t.Fatal(err)
	}
	// A catch-up read of ledger 1: the first miss reads ahead, the rest are cache hits.
	for e := int64(0); e < 300; e++ {
		read(t, s, 1, e, st.Payload(1, e, 700))
	}
	hits, misses := metricValue(t, reg, "bookie_read_cache_hits_total"), metricValue(t, reg, "bookie_read_cache_misses_total")
	if hits < 250 || misses > 10 {
		t.Fatalf("read-ahead: %v hits, %v misses over 300 sequential reads", hits, misses)
	}
	for _, name := range []string{"bookie_add_entry_latency_seconds", "bookie_journal_sync_latency_seconds",
		"bookie_journal_force_write_grouping_count", "bookie_write_cache_size_bytes", "bookie_read_cache_size_bytes",
		"bookie_flush_latency_seconds", "bookie_server_status", "bookie_read_entry_latency_seconds"} {
		metricValue(t, reg, name) // fails the test when it is not registered
	}
	// A storage reopened in the same process on the same registry takes the metrics over.
	s2, err := storage.Open(testConfig(t.TempDir()), nil, reg)
	if err != nil {
		t.Fatalf("second storage on one registry: %v", err)
	}
	_ = s2.Close()
}

// metricValue returns a registered metric's value (a histogram's sample count).
func metricValue(t *testing.T, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name {
			m := mf.GetMetric()[0]
			switch {
			case m.Counter != nil:
				return m.GetCounter().GetValue()
			case m.Gauge != nil:
				return m.GetGauge().GetValue()
			case m.Histogram != nil:
				return float64(m.GetHistogram().GetSampleCount())
			}
		}
	}
	t.Fatalf("metric %s not registered", name)
	return 0
}
