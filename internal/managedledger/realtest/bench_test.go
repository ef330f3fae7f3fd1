package realtest

import (
	"context"
	"testing"
	"time"

	"github.com/magnetar-io/magnetar/internal/ledger"
	"github.com/magnetar-io/magnetar/internal/managedledger"
)

// Add throughput through the managed ledger vs the raw ledger client, both on one real
// bookie (disk journal with fsync) over TCP, 1 KiB entries, 1000 in flight. Command and
// results: docs/bench-managedledger.md.

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
// with the entry cache disabled so every batch comes from the bookie (with read-ahead).
func BenchmarkRealCatchUpRead(b *testing.B) { benchRealRead(b, 0) }

// BenchmarkRealTailRead is the same read with the entry cache holding the backlog.
func BenchmarkRealTailRead(b *testing.B) { benchRealRead(b, 1024) }

func benchRealRead(b *testing.B, cacheMB int64) {
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
	mcfg.MaxEntriesPerLedger = 50000
	f, err := managedledger.NewFactory(managedledger.FactoryOptions{Ledger: s.lc, Store: store, Config: mcfg})
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
