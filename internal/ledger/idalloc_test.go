package ledger

import (
	"context"
	"sync"
	"testing"

	"github.com/magnetar-io/magnetar/internal/metadata"
	"github.com/magnetar-io/magnetar/internal/metadata/memstore"
)

// TestLedgerIDsUniqueAndIncreasing: ids taken at once are unique, with one write each (no
// CAS to lose, so 1,000 concurrent creations are not a quadratic race), and ids taken one
// after another increase whoever takes them, as positions (ordered by ledger id) need.
func TestLedgerIDsUniqueAndIncreasing(t *testing.T) {
	ctx := context.Background()
	store := memstore.New(memstore.Options{})
	defer store.Close()
	// A data directory of the previous scheme: ids 0..41 were taken, the counter says 42.
	if _, err := store.Put(ctx, idCounterKey, []byte("42"), metadata.NotExists); err != nil {
		t.Fatal(err)
	}
	for range 41 { // the other writes those 42 creations made
		if _, err := store.Put(ctx, "/other", []byte("x"), metadata.AnyVersion); err != nil {
			t.Fatal(err)
		}
	}
	const n = 1000
	ids := make(chan int64, n)
	var wg sync.WaitGroup
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			id, err := allocateLedgerID(ctx, store)
			if err != nil {
				t.Error(err)
				return
			}
			ids <- id
		}()
	}
	wg.Wait()
	close(ids)
	seen := map[int64]bool{}
	for id := range ids {
		if seen[id] || id <= 41 {
			t.Fatalf("ledger id %d handed out twice or reused from the old counter", id)
		}
		seen[id] = true
	}
	last := int64(-1)
	for range 10 {
		id, err := allocateLedgerID(ctx, store)
		if err != nil {
			t.Fatal(err)
		}
		if id <= last {
			t.Fatalf("id %d after %d: ids must increase", id, last)
		}
		last = id
	}
	kv, err := store.Get(ctx, idCounterKey)
	if err != nil {
		t.Fatal(err)
	}
	if int64(kv.Version) != last {
		t.Fatalf("the counter is at version %d, the last id was %d", kv.Version, last)
	}
}
