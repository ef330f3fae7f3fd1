package managedledger

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/magnetar-io/magnetar/internal/ledger/memledger"
)

// TestConcurrentAddsReadsAcksTrims runs a producer, two subscriptions acknowledging out of
// order, a reader, and maintenance (trim, quota, stats, rollover) at once, under -race, and
// checks that every entry is delivered to each subscription and the backlogs drain.
func TestConcurrentAddsReadsAcksTrims(t *testing.T) {
	e := newEnv(t)
	e.cfg.MarkDeleteRateLimit = 50
	e.cfg.CacheSizeMB = 1
	e.lc.SetFaults(memledger.Faults{AppendDelay: 20 * time.Microsecond})
	f := e.factory()
	ml := open(t, f, "t/stress", func(c *Config) { c.MaxEntriesPerLedger = 37; c.ReadAheadEntries = 10 })
	const n = 1500
	var subs []*Cursor
	for i := 0; i < 2; i++ {
		c, err := ml.OpenCursor(ctxT(t), fmt.Sprint("sub", i), InitialPositionEarliest)
		must(t, err)
		subs = append(subs, c)
	}
	ctx, cancel := context.WithCancel(ctxT(t))
	defer cancel()
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { // producer
		defer wg.Done()
		for i := 0; i < n; i++ {
			for {
				err := ml.AddEntry([]byte(fmt.Sprint(i)), func(_ Position, err error) {
					if err != nil {
						t.Errorf("add: %v", err)
					}
				})
				if errors.Is(err, ErrTooBusy) {
					time.Sleep(time.Millisecond)
					continue
				}
				if err != nil {
					t.Errorf("add %d: %v", i, err)
				}
				break
			}
		}
	}()
	for si, c := range subs {
		wg.Add(1)
		go func() { // consumer: reads, acks out of order, sometimes rewinds
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(si), 1))
			seen := map[Position]bool{}
			var unacked []Position
			for len(seen) < n {
				es, err := c.ReadEntriesOrWait(ctx, 1+rng.IntN(20), 0)
				if err != nil {
					t.Errorf("read: %v", err)
					return
				}
				for _, en := range es {
					seen[en.Position] = true
					unacked = append(unacked, en.Position)
				}
				rng.Shuffle(len(unacked), func(i, j int) { unacked[i], unacked[j] = unacked[j], unacked[i] })
				k := rng.IntN(len(unacked) + 1)
				if err := c.Delete(unacked[:k]...); err != nil {
					t.Errorf("ack: %v", err)
				}
				unacked = append(unacked[:0], unacked[k:]...)
				if rng.IntN(20) == 0 {
					c.Rewind() // redelivery of the unacked ones
				}
			}
			if err := c.Delete(unacked...); err != nil {
				t.Errorf("final ack: %v", err)
			}
		}()
	}
	wg.Add(1)
	go func() { // maintenance
		defer wg.Done()
		for ctx.Err() == nil {
			f.RunMaintenance(ctx)
			_, _ = ml.Retention().CheckBacklogQuota(ctx, BacklogQuota{LimitBytes: 1 << 30, Policy: ProducerRequestHold})
			_ = ml.InternalStats()
			time.Sleep(time.Millisecond)
		}
	}()
	waitFor(t, "backlogs drained", func() bool {
		return ml.NumberOfEntries() > 0 && ml.Stats().EntriesAdded == n && subs[0].Backlog() == 0 && subs[1].Backlog() == 0
	})
	cancel()
	wg.Wait()
	must(t, ml.Retention().Trim(ctxT(t)))
	if l := len(ml.LedgerIDs()); l > 2 {
		t.Fatalf("%d ledgers left after everything was consumed", l)
	}
}
