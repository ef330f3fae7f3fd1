package realtest

import (
	"context"
	"flag"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/magnetar-io/magnetar/internal/managedledger"
	"github.com/magnetar-io/magnetar/internal/offload"
	"github.com/magnetar-io/magnetar/internal/testenv"
)

var (
	offloadBacklogMB = flag.Int("offload-backlog-mb", 256, "BenchmarkRealOffload: backlog to offload, in MiB")
	offloadEntryKB   = flag.Int("offload-entry-kb", 16, "BenchmarkRealOffload: entry size in KiB (a batch of messages)")
)

// BenchmarkRealOffload measures, in one run on one real bookie, etcd and the S3-compatible
// server of internal/testenv: the catch-up read of a backlog from the bookies, the offload
// of the same backlog (MB/s of ledger payload), and the catch-up read of it from tiered
// storage after the bookie copies are deleted; and the peak Go heap during the offload.
// Run with -benchtime 1x (command and results: docs/benchmarks.md).
func BenchmarkRealOffload(b *testing.B) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Hour)
	defer cancel()
	store, _ := startCluster(ctx, b)
	s3 := testenv.StartS3(b)
	s3.CreateBucket(b, "bench")
	s, err := newStack(ctx, store)
	if err != nil {
		b.Fatal(err)
	}
	defer s.close()
	oc := offload.DefaultConfig()
	oc.Driver, oc.Bucket, oc.ServiceEndpoint, oc.Region = offload.DriverS3, "bench", s3.Endpoint, s3.Region
	oc.CredentialID, oc.CredentialSecret = s3.AccessKey, s3.SecretKey
	o, err := offload.New(ctx, oc, offload.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer o.Close()
	mcfg := mlConfig()
	mcfg.CacheSizeMB = 0
	entry := make([]byte, *offloadEntryKB<<10)
	n := (*offloadBacklogMB << 20) / len(entry)
	mcfg.MaxEntriesPerLedger = int64(max(64, n/16)) // ~16 ledgers
	f, err := managedledger.NewFactory(managedledger.FactoryOptions{Ledger: s.lc, Store: store, Config: mcfg, DisableBackground: true, Offloader: o})
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close(ctx)
	cfg := f.DefaultConfig()
	cfg.Offload.DeletionLagMillis = 0
	ml, err := f.Open(ctx, "bench/offload", cfg)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := ml.OpenCursor(ctx, "keep", managedledger.InitialPositionEarliest); err != nil {
		b.Fatal(err)
	}
	sem := make(chan struct{}, 64)
	for i := 0; i < n; i++ {
		sem <- struct{}{}
		entry[0], entry[1] = byte(i), byte(i>>8)
		if err := ml.AddEntry(append([]byte(nil), entry...), func(_ managedledger.Position, err error) {
			if err != nil {
				b.Error(err)
			}
			<-sem
		}); err != nil {
			b.Fatal(err)
		}
	}
	for range cap(sem) {
		sem <- struct{}{}
	}
	ml.CheckRollover()
	// Roll the last full ledger over so that everything but a small tail is closed.
	if _, err := ml.Add(ctx, []byte("tail")); err != nil {
		b.Fatal(err)
	}

	catchUp := func(name string) float64 {
		c, err := ml.NewNonDurableCursor(managedledger.Earliest, false)
		if err != nil {
			b.Fatal(err)
		}
		defer c.Close(ctx)
		start := time.Now()
		var bytes int64
		for read := 0; read < n; {
			es, err := c.ReadEntries(ctx, 100, 0)
			if err != nil {
				b.Fatalf("%s: %v", name, err)
			}
			if len(es) == 0 {
				b.Fatalf("%s ran dry at %d of %d", name, read, n)
			}
			for _, e := range es {
				bytes += int64(len(e.Data))
			}
			read += len(es)
		}
		return float64(bytes) / (1 << 20) / time.Since(start).Seconds()
	}
	b.ResetTimer()
	bk := catchUp("bookie catch-up")

	var peak atomic.Uint64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		var ms runtime.MemStats
		for {
			runtime.ReadMemStats(&ms)
			if ms.HeapInuse > peak.Load() {
				peak.Store(ms.HeapInuse)
			}
			select {
			case <-stop:
				return
			case <-time.After(20 * time.Millisecond):
			}
		}
	}()
	start := time.Now()
	if _, err := ml.Offload(ctx, ml.LastConfirmedEntry()); err != nil {
		b.Fatal(err)
	}
	offloadSecs := time.Since(start).Seconds()
	close(stop)
	wg.Wait()
	offloaded := float64(ml.OffloadedSize()) / (1 << 20)
	if offloaded == 0 {
		b.Fatal("nothing was offloaded")
	}
	f.RunMaintenance(ctx) // deletion lag 0: the bookie copies go
	tiered := catchUp("tiered catch-up")
	b.StopTimer()

	b.ReportMetric(bk, "bk-catchup-MB/s")
	b.ReportMetric(offloaded/offloadSecs, "offload-MB/s")
	b.ReportMetric(tiered, "tiered-catchup-MB/s")
	b.ReportMetric(tiered/bk, "tiered/bk")
	b.ReportMetric(float64(peak.Load())/(1<<20), "offload-peak-heap-MB")
	b.ReportMetric(offloaded, "offloaded-MB")
}
