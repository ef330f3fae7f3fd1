package storage_test

import (
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/magnetar-io/magnetar/internal/bookie/storage"
)

// BenchmarkAdd measures AddEntry with fsync on: adds/s and entries per fsync, for entry
// sizes and numbers of adds in flight. Run:
//
//	go test -tags pebblegozstd -run '^$' -bench BenchmarkAdd -benchtime 200000x ./internal/bookie/storage/
func BenchmarkAdd(b *testing.B) {
	for _, size := range []int{100, 1 << 10, 64 << 10} {
		for _, inflight := range []int{1, 16, 256} {
			b.Run(fmt.Sprintf("size=%d/inflight=%d", size, inflight), func(b *testing.B) {
				benchAdd(b, size, inflight)
			})
		}
	}
}

func benchAdd(b *testing.B, size, inflight int) {
	cfg := testConfig(b.TempDir())
	cfg.WriteCacheMaxSizeMB = 64
	cfg.FlushInterval = 10 * time.Second
	cfg.JournalPreAllocSizeMB = 16
	reg := prometheus.NewRegistry()
	s, err := storage.Open(cfg, nil, reg)
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	payload := make([]byte, size)
	for i := range payload {
		payload[i] = byte(i)
	}
	sem := make(chan struct{}, inflight)
	done := func(err error) {
		if err != nil {
			b.Error(err)
		}
		<-sem
	}
	b.SetBytes(int64(size))
	b.ResetTimer()
	start := time.Now()
	for i := 0; i < b.N; i++ {
		sem <- struct{}{}
		// 8 ledgers, as a bookie serving several topics sees.
		s.AddEntry(int64(i%8), int64(i/8), key, int64(i/8)-1, payload, false, done)
	}
	for range inflight {
		sem <- struct{}{}
	}
	elapsed := time.Since(start)
	b.StopTimer()
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "adds/s")
	if groups, entries := groupStats(b, reg); groups > 0 {
		b.ReportMetric(entries/groups, "entries/fsync")
	}
}

// groupStats reads the group-commit histogram: number of fsyncs and records.
func groupStats(b *testing.B, reg *prometheus.Registry) (groups, entries float64) {
	mfs, err := reg.Gather()
	if err != nil {
		b.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == "bookie_journal_force_write_grouping_count" {
			h := mf.GetMetric()[0].GetHistogram()
			return float64(h.GetSampleCount()), h.GetSampleSum()
		}
	}
	return 0, 0
}

// BenchmarkFdatasyncProbe is the raw disk: pwrite + fdatasync of one block into a
// preallocated file, one at a time, for comparison with the journal's numbers (4 KiB: the
// fsync rate; 1 MiB: the sequential write+fdatasync rate).
func BenchmarkFdatasyncProbe(b *testing.B) {
	for _, blk := range []int{4 << 10, 1 << 20} {
		b.Run(fmt.Sprintf("block=%d", blk), func(b *testing.B) {
			const fileSize = 256 << 20
			f, err := os.OpenFile(filepath.Join(b.TempDir(), "probe"), os.O_RDWR|os.O_CREATE, 0o644)
			if err != nil {
				b.Fatal(err)
			}
			defer f.Close()
			if err := syscall.Fallocate(int(f.Fd()), 0, 0, fileSize); err != nil {
				b.Skip("no fallocate:", err)
			}
			buf := make([]byte, blk)
			b.SetBytes(int64(blk))
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if _, err := f.WriteAt(buf, int64(i%(fileSize/blk))*int64(blk)); err != nil {
					b.Fatal(err)
				}
				if err := syscall.Fdatasync(int(f.Fd())); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
