package managedledger

import (
	"context"
	"math/rand/v2"
	"testing"

	"github.com/magnetar-io/magnetar/internal/ledger"
	"github.com/magnetar-io/magnetar/internal/ledger/memledger"
)

// Benchmarks run on the in-memory ledger, so they measure the managed ledger's own
// overhead (pipeline, bookkeeping, cache, cursor state), not bookies. Command and results:
// docs/benchmarks.md.

const (
	benchEntrySize = 1024
	benchWindow    = 1000 // adds in flight, as a broker with many producers would have
)

func benchEnv(b *testing.B) *env {
	b.Helper()
	t := &testing.T{}
	e := newEnv(t)
	e.cfg.MarkDeleteRateLimit = 1
	return e
}

// BenchmarkAddRawLedger is the baseline: AppendAsync on one memledger writer, 1000 in flight.
func BenchmarkAddRawLedger(b *testing.B) {
	lc := memledger.New()
	w, err := lc.Create(context.Background(), ledger.CreateOptions{EnsembleSize: 1, WriteQuorum: 1, AckQuorum: 1})
	if err != nil {
		b.Fatal(err)
	}
	data := make([]byte, benchEntrySize)
	sem := make(chan struct{}, benchWindow)
	b.SetBytes(benchEntrySize)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		sem <- struct{}{}
		w.AppendAsync(data, func(int64, error) { <-sem })
	}
	for i := 0; i < benchWindow; i++ {
		sem <- struct{}{}
	}
}

// BenchmarkAddManagedLedger is the same load through ManagedLedger.AddEntry (with rollover
// every 50,000 entries and the entry cache on).
func BenchmarkAddManagedLedger(b *testing.B) {
	e := benchEnv(b)
	f, err := NewFactory(FactoryOptions{Ledger: e.lc, Store: e.store, Config: e.cfg, Now: e.clock.Now, DisableBackground: true})
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close(context.Background())
	ml, err := f.Open(context.Background(), "bench/add", f.DefaultConfig())
	if err != nil {
		b.Fatal(err)
	}
	data := make([]byte, benchEntrySize)
	sem := make(chan struct{}, benchWindow)
	b.SetBytes(benchEntrySize)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		sem <- struct{}{}
		if err := ml.AddEntry(data, func(_ Position, err error) {
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

// BenchmarkAckRandomOrder acknowledges entries individually in random order within windows
// of 10,000 (a Shared subscription with many consumers), with cursor persistence running.
func BenchmarkAckRandomOrder(b *testing.B) {
	e := benchEnv(b)
	f, err := NewFactory(FactoryOptions{Ledger: e.lc, Store: e.store, Config: e.cfg, Now: e.clock.Now, DisableBackground: true})
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close(context.Background())
	ml, err := f.Open(context.Background(), "bench/ack", f.DefaultConfig())
	if err != nil {
		b.Fatal(err)
	}
	c, err := ml.OpenCursor(context.Background(), "s", InitialPositionEarliest)
	if err != nil {
		b.Fatal(err)
	}
	ps := make([]Position, b.N)
	done := make(chan struct{}, b.N)
	for i := range ps {
		i := i
		if err := ml.AddEntry([]byte{1}, func(p Position, err error) { ps[i] = p; done <- struct{}{} }); err != nil {
			b.Fatal(err)
		}
		if (i+1)%benchWindow == 0 {
			for j := 0; j < benchWindow; j++ {
				<-done
			}
		}
	}
	for i := 0; i < b.N%benchWindow; i++ {
		<-done
	}
	rng := rand.New(rand.NewPCG(1, 1))
	const window = 10000
	order := make([]int, 0, b.N)
	for start := 0; start < b.N; start += window {
		n := min(window, b.N-start)
		for _, k := range rng.Perm(n) {
			order = append(order, start+k)
		}
	}
	b.ResetTimer()
	for _, k := range order {
		if err := c.Delete(ps[k]); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	if c.Backlog() != 0 {
		b.Fatalf("backlog %d after acking everything", c.Backlog())
	}
}

// BenchmarkReadTail reads entries just added, served by the entry cache.
func BenchmarkReadTail(b *testing.B) { benchRead(b, 256) }

// BenchmarkReadCatchUp reads with the cache disabled: every batch goes to the ledger.
func BenchmarkReadCatchUp(b *testing.B) { benchRead(b, 0) }

func benchRead(b *testing.B, cacheMB int64) {
	e := benchEnv(b)
	e.cfg.CacheSizeMB = cacheMB
	f, err := NewFactory(FactoryOptions{Ledger: e.lc, Store: e.store, Config: e.cfg, Now: e.clock.Now, DisableBackground: true})
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close(context.Background())
	ml, err := f.Open(context.Background(), "bench/read", f.DefaultConfig())
	if err != nil {
		b.Fatal(err)
	}
	c, err := ml.OpenCursor(context.Background(), "s", InitialPositionEarliest)
	if err != nil {
		b.Fatal(err)
	}
	data := make([]byte, benchEntrySize)
	done := make(chan struct{}, benchWindow)
	for i := 0; i < b.N; i++ {
		if err := ml.AddEntry(data, func(Position, error) { done <- struct{}{} }); err != nil {
			b.Fatal(err)
		}
		if (i+1)%benchWindow == 0 {
			for j := 0; j < benchWindow; j++ {
				<-done
			}
		}
	}
	for i := 0; i < b.N%benchWindow; i++ {
		<-done
	}
	b.SetBytes(benchEntrySize)
	b.ResetTimer()
	read := 0
	for read < b.N {
		es, err := c.ReadEntries(context.Background(), 100, 0)
		if err != nil {
			b.Fatal(err)
		}
		if len(es) == 0 {
			b.Fatalf("ran dry at %d of %d", read, b.N)
		}
		read += len(es)
	}
}
