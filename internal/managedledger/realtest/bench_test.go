package realtest

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/magnetar-io/magnetar/internal/ledger"
	"github.com/magnetar-io/magnetar/internal/managedledger"
)

// Add throughput through the managed ledger vs the raw ledger client, both on one real
// bookie (disk journal with fsync) over TCP, 1 KiB entries, 1000 in flight. Command and
// results: docs/benchmarks.md.

const (
	benchEntry  = 1024
	benchWindow = 1000
)

func BenchmarkRealAddRawLedger(b *testing.B) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	store, _ := startCluster(ctx, b)
	s, err := newStack(ctx, store)
	if err != nil {
		b.Fatal(err)
	}
	defer s.close()
	w, err := s.lc.Create(ctx, ledger.CreateOptions{EnsembleSize: 1, WriteQuorum: 1, AckQuorum: 1})
	if err != nil {
		b.Fatal(err)
	}
	data := make([]byte, benchEntry)
	sem := make(chan struct{}, benchWindow)
	b.SetBytes(benchEntry)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		sem <- struct{}{}
		w.AppendAsync(data, func(_ int64, err error) {
			if err != nil {
				b.Error(err)
			}
			<-sem
		})
	}
	for i := 0; i < benchWindow; i++ {
		sem <- struct{}{}
	}
}

func BenchmarkRealAddManagedLedger(b *testing.B) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	store, _ := startCluster(ctx, b)
	s, err := newStack(ctx, store)
	if err != nil {
		b.Fatal(err)
	}
	defer s.close()
	cfg := s.f.DefaultConfig()
	cfg.MaxEntriesPerLedger = 50000
	ml, err := s.f.Open(ctx, "bench/add", cfg)
	if err != nil {
		b.Fatal(err)
	}
	data := make([]byte, benchEntry)
	sem := make(chan struct{}, benchWindow)
	b.SetBytes(benchEntry)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		sem <- struct{}{}
		if err := ml.AddEntry(data, func(_ managedledger.Position, err error) {
			if err != nil {
				b.Error(err)
			}
			<-sem
		}); err != nil {
			b.Fatal(err)
		}
	}
	for i := 0; i < benchWindow; i++ {
		sem <- struct{}{}
	}
}

// BenchmarkRealCatchUpRead reads a backlog of b.N entries written before the timer starts,
// from the bookie: the cache (64 MiB) is emptied first, so batches come from ledger reads,
// each fetching the next ReadAheadEntries into the cache.
func BenchmarkRealCatchUpRead(b *testing.B) { benchRealRead(b, 64, true) }

// BenchmarkRealCatchUpReadNoCache is the catch-up read with the cache disabled: no
// read-ahead, every batch is a ledger read.
func BenchmarkRealCatchUpReadNoCache(b *testing.B) { benchRealRead(b, 0, false) }

// BenchmarkRealTailRead is the same read with the entry cache holding the backlog.
func BenchmarkRealTailRead(b *testing.B) { benchRealRead(b, 1024, false) }

func benchRealRead(b *testing.B, cacheMB int64, evict bool) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	store, _ := startCluster(ctx, b)
	s, err := newStack(ctx, store)
	if err != nil {
		b.Fatal(err)
	}
	defer s.close()
	mcfg := mlConfig()
	mcfg.CacheSizeMB = cacheMB
	mcfg.CacheEvictionTimeThresholdMillis = 3_600_000
	// While ahead is set the clock runs two hours fast, so that the age pass drops
	// everything written so far.
	var ahead atomic.Bool
	mcfg.MaxEntriesPerLedger = 50000
	now := func() time.Time {
		if ahead.Load() {
			return time.Now().Add(2 * time.Hour)
		}
		return time.Now()
	}
	f, err := managedledger.NewFactory(managedledger.FactoryOptions{Ledger: s.lc, Store: store, Config: mcfg, DisableBackground: true, Now: now})
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close(ctx)
	ml, err := f.Open(ctx, "bench/read", f.DefaultConfig())
	if err != nil {
		b.Fatal(err)
	}
	c, err := ml.OpenCursor(ctx, "s", managedledger.InitialPositionEarliest)
	if err != nil {
		b.Fatal(err)
	}
	data := make([]byte, benchEntry)
	sem := make(chan struct{}, benchWindow)
	for i := 0; i < b.N; i++ {
		sem <- struct{}{}
		if err := ml.AddEntry(data, func(managedledger.Position, error) { <-sem }); err != nil {
			b.Fatal(err)
		}
	}
	for i := 0; i < benchWindow; i++ {
		sem <- struct{}{}
	}
	if evict {
		ahead.Store(true)
		f.EvictCache()
		ahead.Store(false)
	}
	b.SetBytes(benchEntry)
	b.ResetTimer()
	for read := 0; read < b.N; {
		es, err := c.ReadEntries(ctx, 100, 0)
		if err != nil {
			b.Fatal(err)
		}
		if len(es) == 0 {
			b.Fatalf("ran dry at %d of %d", read, b.N)
		}
		read += len(es)
	}
}

// BenchmarkRealAddInterleaved alternates rounds of 5,000 adds through the raw ledger writer
// and through the managed ledger on the same bookie, so that load from other processes hits
// both alike, and reports each one's throughput and their ratio.
func BenchmarkRealAddInterleaved(b *testing.B) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	store, _ := startCluster(ctx, b)
	s, err := newStack(ctx, store)
	if err != nil {
		b.Fatal(err)
	}
	defer s.close()
	w, err := s.lc.Create(ctx, ledger.CreateOptions{EnsembleSize: 1, WriteQuorum: 1, AckQuorum: 1})
	if err != nil {
		b.Fatal(err)
	}
	cfg := s.f.DefaultConfig()
	cfg.MaxEntriesPerLedger = 50000 // Pulsar's default: rollovers are part of the cost
	ml, err := s.f.Open(ctx, "bench/interleaved", cfg)
	if err != nil {
		b.Fatal(err)
	}
	data := make([]byte, benchEntry)
	raw := func(n int) {
		sem := make(chan struct{}, benchWindow)
		for i := 0; i < n; i++ {
			sem <- struct{}{}
			w.AppendAsync(data, func(int64, error) { <-sem })
		}
		for i := 0; i < benchWindow; i++ {
			sem <- struct{}{}
		}
	}
	managed := func(n int) {
		sem := make(chan struct{}, benchWindow)
		for i := 0; i < n; i++ {
			sem <- struct{}{}
			if err := ml.AddEntry(data, func(managedledger.Position, error) { <-sem }); err != nil {
				b.Fatal(err)
			}
		}
		for i := 0; i < benchWindow; i++ {
			sem <- struct{}{}
		}
	}
	const round = 5000
	var rawT, mlT time.Duration
	b.ResetTimer()
	for done := 0; done < b.N; done += round {
		t0 := time.Now()
		raw(round)
		t1 := time.Now()
		managed(round)
		rawT += t1.Sub(t0)
		mlT += time.Since(t1)
	}
	n := float64((b.N + round - 1) / round * round)
	b.ReportMetric(n/rawT.Seconds(), "raw-adds/s")
	b.ReportMetric(n/mlT.Seconds(), "ml-adds/s")
	b.ReportMetric(rawT.Seconds()/mlT.Seconds(), "ml/raw")
}
