package storage_test

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"

	st "github.com/magnetar-io/magnetar/internal/bookie/storage/storagetest"
)

// A full write cache makes adds wait; memory stays within the configured bound.
func TestWriteCacheBackpressure(t *testing.T) {
	cfg := testConfig(t.TempDir())
	cfg.WriteCacheMaxSizeMB = 4
	cfg.JournalQueueSizeBytes = 1 << 20
	cfg.FlushInterval = time.Hour
	s := openTest(t, cfg, nil)
	defer s.Close()
	release := s.StallFlusher()
	const n, size = 400, 32 << 10 // 12.5 MiB: three times the cache
	var acked atomic.Int64
	var wg sync.WaitGroup
	wg.Add(n)
	issued := make(chan struct{})
	go func() {
		for e := int64(0); e < n; e++ {
			s.AddEntry(1, e, key, e-1, st.Payload(1, e, size), false, func(err error) {
				if err != nil {
					t.Errorf("add %d: %v", e, err)
				}
				acked.Add(1)
				wg.Done()
			})
		}
		close(issued)
	}()
	// Wait until the adds stop making progress, then check they are held back.
	for last := int64(-1); acked.Load() != last; {
		last = acked.Load()
		time.Sleep(200 * time.Millisecond)
	}
	select {
	case <-issued:
		t.Fatal("all adds were taken while the flusher was stalled: no backpressure")
	default:
	}
	if got := s.WriteCacheBytes(); got > cfg.WriteCacheMaxSizeMB<<20 {
		t.Fatalf("write cache holds %d bytes, bound is %d", got, cfg.WriteCacheMaxSizeMB<<20)
	}
	if a := acked.Load(); a*size > (cfg.WriteCacheMaxSizeMB<<20)+cfg.JournalQueueSizeBytes {
		t.Fatalf("%d adds acknowledged with the flusher stalled: more than cache + queue", a)
	}
	release()
	wg.Wait()
	for e := int64(0); e < n; e++ {
		read(t, s, 1, e, st.Payload(1, e, size))
	}
}
