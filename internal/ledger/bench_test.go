package ledger

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/magnetar-io/magnetar/internal/config"
	"github.com/magnetar-io/magnetar/internal/resources"
)

// BenchmarkReplicatedAdd measures pipelined 1 KiB adds through the ledger client to bookie
// processes (disk storage with journal fsync, TCP on loopback, etcd metadata), replicated
// E=3 Qw=2 Qa=2 and E=3 Qw=3 Qa=2 against one bookie, all on the same three processes.
// Reports adds/s and add latency percentiles. Results and the command: docs/benchmarks.md.
func BenchmarkReplicatedAdd(b *testing.B) {
	pc, _ := newProcCluster(b, 3)
	for _, q := range []struct {
		name    string
		e, w, a int
	}{{"1bookie_E1Qw1Qa1", 1, 1, 1}, {"3bookies_E3Qw2Qa2", 3, 2, 2}, {"3bookies_E3Qw3Qa2", 3, 3, 2}} {
		b.Run(q.name, func(b *testing.B) {
			c := newTestClient(b, pc.metaStore(), pc.newBookieClient(), func(cfg *config.LedgerClientConfig) {
				cfg.MaxAddsInProgress = 1000
				cfg.AddEntryTimeout = 30 * time.Second
			})
			ctx := context.Background()
			w, err := c.Create(ctx, CreateOptions{EnsembleSize: q.e, WriteQuorum: q.w, AckQuorum: q.a, Password: testPassword})
			if err != nil {
				b.Fatal(err)
			}
			payload := make([]byte, 1024)
			hist := hdrhistogram.New(1, 60_000_000, 3)
			var mu sync.Mutex
			var wg sync.WaitGroup
			b.SetBytes(int64(len(payload)))
			b.ResetTimer()
			start := time.Now()
			for range b.N {
				wg.Add(1)
				sent := time.Now()
				w.AppendAsync(payload, func(_ int64, err error) {
					if err != nil {
						b.Error(err)
					}
					us := time.Since(sent).Microseconds()
					mu.Lock()
					_ = hist.RecordValue(us)
					mu.Unlock()
					wg.Done()
				})
			}
			wg.Wait()
			elapsed := time.Since(start)
			b.StopTimer()
			b.ReportMetric(float64(b.N)/elapsed.Seconds(), "adds/s")
			b.ReportMetric(float64(hist.ValueAtQuantile(50))/1000, "p50-ms")
			b.ReportMetric(float64(hist.ValueAtQuantile(99))/1000, "p99-ms")
			if err := w.Close(ctx); err != nil {
				b.Fatal(err)
			}
		})
	}
}

// BenchmarkWriteStallOnBookieKill measures, per iteration, the time from SIGKILLing a bookie
// of a busy E=3 Qw=2 Qa=2 ledger (four bookie processes, so a spare exists; Qw=Qa so the
// entries whose write set holds the dead bookie must wait) to the acknowledgement of the
// first entry of the new fragment. Reported as stall-ms (mean over iterations) and
// stall-max-ms (the worst iteration).
func BenchmarkWriteStallOnBookieKill(b *testing.B) {
	pc, _ := newProcCluster(b, 4)
	c := newTestClient(b, pc.metaStore(), pc.newBookieClient(), func(cfg *config.LedgerClientConfig) {
		cfg.MaxAddsInProgress = 1000
	})
	ctx := context.Background()
	payload := make([]byte, 1024)
	var total, worst time.Duration
	for range b.N {
		b.StopTimer()
		pc.mu.Lock()
		n := len(pc.procs)
		pc.mu.Unlock()
		for ; n < 4; n++ {
			pc.start()
		}
		w, err := c.Create(ctx, CreateOptions{EnsembleSize: 3, WriteQuorum: 2, AckQuorum: 2, Password: testPassword})
		if err != nil {
			b.Fatal(err)
		}
		victim := mustMeta(b, pc.metaStore(), w.ID()).Fragments[0].Ensemble[0]
		var mu sync.Mutex
		acked := map[int64]time.Time{}
		stop := make(chan struct{})
		var feeder sync.WaitGroup
		feeder.Add(1)
		go func() {
			defer feeder.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				w.AppendAsync(payload, func(id int64, err error) {
					if err == nil {
						mu.Lock()
						acked[id] = time.Now()
						mu.Unlock()
					}
				})
			}
		}()
		waitFor(b, func() bool { return w.LastAddConfirmed() >= 500 })
		b.StartTimer()
		killed := time.Now()
		pc.kill(victim)
		var first int64
		waitFor(b, func() bool {
			m := mustMeta(b, pc.metaStore(), w.ID())
			if len(m.Fragments) < 2 {
				return false
			}
			first = m.Fragments[1].FirstEntry
			mu.Lock()
			defer mu.Unlock()
			_, ok := acked[first]
			return ok
		})
		mu.Lock()
		stall := acked[first].Sub(killed)
		total += stall
		worst = max(worst, stall)
		mu.Unlock()
		b.StopTimer()
		close(stop)
		feeder.Wait()
		if err := w.Close(ctx); err != nil {
			b.Fatal(err)
		}
		// The next ledger must not be placed on the dead bookie before its lease expires.
		waitFor(b, func() bool {
			_, err := pc.store.Get(ctx, resources.BookieRegistrationsPrefix+victim)
			return err != nil
		})
		b.StartTimer()
	}
	b.ReportMetric(float64(total.Microseconds())/1000/float64(b.N), "stall-ms")
	b.ReportMetric(float64(worst.Microseconds())/1000, "stall-max-ms")
}
