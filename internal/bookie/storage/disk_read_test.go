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

// TestReadCacheHandsPayloadsOver: a read-cache hit gives the payload to the reader and
// drops it from the cache (the cache's size falls back), so a reader scribbling on what it
// got cannot corrupt a later read, which comes from the entry log again.
func TestReadCacheHandsPayloadsOver(t *testing.T) {
	s, reg := readAheadOf(t, 50, 500) // entries 1..49 are in the read cache
	if size := metricValue(t, reg, "bookie_read_cache_size_bytes"); size < 49*500 {
		t.Fatalf("read cache holds %v bytes after read-ahead of 49 entries of 500 B", size)
	}
	for e := int64(1); e < 50; e++ {
		got, err := s.ReadEntry(1, e)
		if err != nil || string(got) != string(st.Payload(1, e, 500)) {
			t.Fatalf("entry %d: %v", e, err)
		}
		for i := range got {
			got[i] ^= 0xff
		}
	}
	if hits := metricValue(t, reg, "bookie_read_cache_hits_total"); hits != 49 {
		t.Fatalf("%v read-cache hits, want 49", hits)
	}
	if size := metricValue(t, reg, "bookie_read_cache_size_bytes"); size != 0 {
		t.Fatalf("read cache holds %v bytes after every read-ahead entry was read", size)
	}
	// Entry 0 is re-read from the entry log (reading ahead again); 1.. come out intact.
	for e := int64(0); e < 50; e++ {
		read(t, s, 1, e, st.Payload(1, e, 500))
	}
}

// readAheadOf stores n entries of ledger 1 with size-byte payloads, flushes them into one
// entry log and reads entry 0, whose miss reads the others ahead into the read cache.
func readAheadOf(t *testing.T, n int64, size int) (*storage.Disk, *prometheus.Registry) {
	t.Helper()
	cfg := testConfig(t.TempDir())
	cfg.FlushInterval = time.Hour
	reg := prometheus.NewRegistry()
	s, err := storage.OpenWithFS(cfg, vfs.Default(), nil, reg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	for e := int64(0); e < n; e++ {
		add(t, s, 1, e, st.Payload(1, e, size))
	}
	if err := s.FlushNow(); err != nil {
		t.Fatal(err)
	}
	read(t, s, 1, 0, st.Payload(1, 0, size))
	return s, reg
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

// TestUnreadReturnsAnEntryToTheReadCache: a range read that takes an entry it will not send
// gives it back, and the next read of it is a read-cache hit, not a new read-ahead.
func TestUnreadReturnsAnEntryToTheReadCache(t *testing.T) {
	s, reg := readAheadOf(t, 10, 300) // entries 1..9 are in the read cache
	p, err := s.ReadEntry(1, 1)
	if err != nil {
		t.Fatal(err)
	}
	s.Unread(1, 1, p)
	read(t, s, 1, 1, st.Payload(1, 1, 300))
	if hits, misses := metricValue(t, reg, "bookie_read_cache_hits_total"), metricValue(t, reg, "bookie_read_cache_misses_total"); hits != 2 || misses != 1 {
		t.Fatalf("%v hits, %v misses; want 2 and 1 (entry 1 given back)", hits, misses)
	}
}
