package ledger

import (
	"context"
	"sync"
	"testing"

	"github.com/magnetar-io/magnetar/internal/metadata/memstore"
)

// TestIDAllocatorUniqueUnderContention: clients allocating at once get unique ids, and a
// client takes a block per CAS, so 1,000 concurrent allocations from two clients bump the
// counter about 10 times, not 1,000 (each after re-reading it up to 1,000 times).
func TestIDAllocatorUniqueUnderContention(t *testing.T) {
	ctx := context.Background()
	store := memstore.New(memstore.Options{})
	defer store.Close()
	var clients [2]idAllocator
	const n = 1000
	ids := make(chan int64, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			id, err := clients[i%2].allocate(ctx, store)
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
		if seen[id] {
			t.Fatalf("ledger id %d handed out twice", id)
		}
		seen[id] = true
	}
	if len(seen) != n {
		t.Fatalf("%d ids, want %d", len(seen), n)
	}
	kv, err := store.Get(ctx, idCounterKey)
	if err != nil {
		t.Fatal(err)
	}
	if bumps := kv.Version; bumps > n/idBlockSize+2 {
		t.Fatalf("the counter was bumped %d times for %d ids in blocks of %d", bumps, n, idBlockSize)
	}
}
