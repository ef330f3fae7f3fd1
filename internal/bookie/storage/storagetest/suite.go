package storagetest

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/magnetar-io/magnetar/internal/bookie/storage"
)

// waitTimeout bounds every wait of the suite; generous, it is never a timing assertion.
const waitTimeout = 30 * time.Second

var mk = []byte("master-key-0123456789")

// Run runs the conformance suite. newStorage returns a fresh, empty storage for each
// subtest; Run closes it.
func Run(t *testing.T, newStorage func(t *testing.T) storage.Storage) {
	tests := []struct {
		name string
		fn   func(t *testing.T, s storage.Storage)
	}{
		{"AddRead", testAddRead},
		{"Missing", testMissing},
		{"MasterKey", testMasterKey},
		{"Fence", testFence},
		{"FenceUnknownLedger", testFenceUnknown},
		{"LAC", testLAC},
		{"WaitLAC", testWaitLAC},
		{"Delete", testDelete},
		{"CallbackOrder", testCallbackOrder},
		{"Concurrent", testConcurrent},
		{"Sizes", testSizes},
		{"BadIDs", testBadIDs},
		{"Close", testClose},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := newStorage(t)
			defer func() {
				if err := s.Close(); err != nil && !errors.Is(err, storage.ErrClosed) {
					t.Errorf("Close: %v", err)
				}
			}()
			tc.fn(t, s)
		})
	}
}

// Add adds one entry and waits for its callback.
func Add(t testing.TB, s storage.Storage, ledgerID, entryID int64, masterKey []byte, lac int64, payload []byte, recovery bool) error {
	t.Helper()
	ch := make(chan error, 1)
	s.AddEntry(ledgerID, entryID, masterKey, lac, payload, recovery, func(err error) { ch <- err })
	select {
	case err := <-ch:
		return err
	case <-time.After(waitTimeout):
		t.Fatalf("add (%d,%d): no callback after %v", ledgerID, entryID, waitTimeout)
		return nil
	}
}

// Payload returns deterministic bytes for (ledger, entry) of the given size.
func Payload(ledgerID, entryID int64, size int) []byte {
	r := rand.New(rand.NewPCG(uint64(ledgerID), uint64(entryID)))
	p := make([]byte, size+7)
	for i := 0; i < size; i += 8 {
		binary.LittleEndian.PutUint64(p[i:], r.Uint64())
	}
	return p[:size:size]
}

func mustAdd(t *testing.T, s storage.Storage, l, e int64, lac int64, p []byte) {
	t.Helper()
	if err := Add(t, s, l, e, mk, lac, p, false); err != nil {
		t.Fatalf("add (%d,%d): %v", l, e, err)
	}
}

func mustRead(t *testing.T, s storage.Storage, l, e int64, want []byte) {
	t.Helper()
	got, err := s.ReadEntry(l, e)
	if err != nil {
		t.Fatalf("read (%d,%d): %v", l, e, err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("read (%d,%d): got %d bytes, want %d (content differs)", l, e, len(got), len(want))
	}
}

func testAddRead(t *testing.T, s storage.Storage) {
	for l := int64(1); l <= 3; l++ {
		for e := int64(0); e < 20; e++ {
			mustAdd(t, s, l, e, e-1, Payload(l, e, 100+int(e)))
		}
	}
	for l := int64(1); l <= 3; l++ {
		for e := int64(0); e < 20; e++ {
			mustRead(t, s, l, e, Payload(l, e, 100+int(e)))
		}
	}
	// The returned slice is a copy: scribbling on it changes nothing stored.
	got, _ := s.ReadEntry(1, 0)
	for i := range got {
		got[i] ^= 0xff
	}
	mustRead(t, s, 1, 0, Payload(1, 0, 100))
}

func testMissing(t *testing.T, s storage.Storage) {
	if _, err := s.ReadEntry(7, 0); !errors.Is(err, storage.ErrNoSuchLedger) {
		t.Fatalf("read of unknown ledger: %v, want ErrNoSuchLedger", err)
	}
	mustAdd(t, s, 7, 0, -1, []byte("x"))
	if _, err := s.ReadEntry(7, 1); !errors.Is(err, storage.ErrNoSuchEntry) {
		t.Fatalf("read of missing entry: %v, want ErrNoSuchEntry", err)
	}
	if _, err := s.LAC(8); !errors.Is(err, storage.ErrNoSuchLedger) {
		t.Fatalf("LAC of unknown ledger: %v, want ErrNoSuchLedger", err)
	}
}

func testMasterKey(t *testing.T, s storage.Storage) {
	mustAdd(t, s, 1, 0, -1, []byte("a"))
	if err := Add(t, s, 1, 1, []byte("other"), -1, []byte("b"), false); !errors.Is(err, storage.ErrUnauthorized) {
		t.Fatalf("add with wrong key: %v, want ErrUnauthorized", err)
	}
	if _, err := s.Fence(1, []byte("other")); !errors.Is(err, storage.ErrUnauthorized) {
		t.Fatalf("fence with wrong key: %v, want ErrUnauthorized", err)
	}
	if _, err := s.ReadEntry(1, 1); !errors.Is(err, storage.ErrNoSuchEntry) {
		t.Fatalf("rejected add is readable: %v", err)
	}
}

func testFence(t *testing.T, s storage.Storage) {
	mustAdd(t, s, 1, 0, -1, []byte("a"))
	mustAdd(t, s, 1, 1, 0, []byte("b"))
	lac, err := s.Fence(1, mk)
	if err != nil || lac != 0 {
		t.Fatalf("Fence = %d, %v; want 0, nil", lac, err)
	}
	if err := Add(t, s, 1, 2, mk, 1, []byte("c"), false); !errors.Is(err, storage.ErrFenced) {
		t.Fatalf("add after fence: %v, want ErrFenced", err)
	}
	if _, err := s.ReadEntry(1, 2); !errors.Is(err, storage.ErrNoSuchEntry) {
		t.Fatalf("fenced add is readable: %v", err)
	}
	// Recovery adds are allowed on a fenced ledger (they rewrite recovered entries).
	if err := Add(t, s, 1, 2, mk, 1, []byte("c"), true); err != nil {
		t.Fatalf("recovery add after fence: %v", err)
	}
	mustRead(t, s, 1, 2, []byte("c"))
	// Fencing twice is fine.
	if _, err := s.Fence(1, mk); err != nil {
		t.Fatalf("second fence: %v", err)
	}
}

func testFenceUnknown(t *testing.T, s storage.Storage) {
	// A bookie fences a ledger it has never seen, or the old writer could add to it later.
	lac, err := s.Fence(42, mk)
	if err != nil || lac != -1 {
		t.Fatalf("Fence(unknown) = %d, %v; want -1, nil", lac, err)
	}
	if err := Add(t, s, 42, 0, mk, -1, []byte("late"), false); !errors.Is(err, storage.ErrFenced) {
		t.Fatalf("add after fencing an unknown ledger: %v, want ErrFenced", err)
	}
	if _, err := s.ReadEntry(42, 0); !errors.Is(err, storage.ErrNoSuchEntry) {
		t.Fatalf("read of fenced empty ledger: %v, want ErrNoSuchEntry", err)
	}
}

func testLAC(t *testing.T, s storage.Storage) {
	mustAdd(t, s, 3, 0, -1, []byte("a"))
	if lac, err := s.LAC(3); err != nil || lac != -1 {
		t.Fatalf("LAC = %d, %v; want -1", lac, err)
	}
	mustAdd(t, s, 3, 1, 0, []byte("b"))
	mustAdd(t, s, 3, 5, 4, []byte("f"))
	// An older piggybacked LAC (a retried add) never moves it back.
	mustAdd(t, s, 3, 2, 1, []byte("c"))
	if lac, err := s.LAC(3); err != nil || lac != 4 {
		t.Fatalf("LAC = %d, %v; want 4", lac, err)
	}
}

func testWaitLAC(t *testing.T, s storage.Storage) {
	mustAdd(t, s, 4, 0, -1, []byte("a"))
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	lac, err := s.WaitLAC(ctx, 4, -1)
	cancel()
	if err != nil || lac != -1 {
		t.Fatalf("WaitLAC timeout = %d, %v; want -1, nil", lac, err)
	}
	got := make(chan int64, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
		defer cancel()
		l, _ := s.WaitLAC(ctx, 4, 0)
		got <- l
	}()
	mustAdd(t, s, 4, 1, 0, []byte("b")) // LAC 0 does not pass 0
	mustAdd(t, s, 4, 2, 1, []byte("c"))
	select {
	case l := <-got:
		if l < 1 {
			t.Fatalf("WaitLAC woke with %d, want >= 1", l)
		}
	case <-time.After(waitTimeout):
		t.Fatal("WaitLAC did not wake")
	}
	// Already past: returns at once.
	ctx, cancel = context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	if l, err := s.WaitLAC(ctx, 4, -1); err != nil || l != 1 {
		t.Fatalf("WaitLAC(past) = %d, %v; want 1", l, err)
	}
}

func testDelete(t *testing.T, s storage.Storage) {
	for e := int64(0); e < 10; e++ {
		mustAdd(t, s, 5, e, e-1, Payload(5, e, 50))
		mustAdd(t, s, 6, e, e-1, Payload(6, e, 50))
	}
	if err := s.DeleteLedger(5); err != nil {
		t.Fatalf("DeleteLedger: %v", err)
	}
	if err := s.DeleteLedger(5); err != nil {
		t.Fatalf("DeleteLedger twice: %v", err)
	}
	if err := s.DeleteLedger(999); err != nil {
		t.Fatalf("DeleteLedger(unknown): %v", err)
	}
	if _, err := s.ReadEntry(5, 0); !errors.Is(err, storage.ErrNoSuchLedger) {
		t.Fatalf("read of deleted ledger: %v, want ErrNoSuchLedger", err)
	}
	if err := Add(t, s, 5, 10, mk, 9, []byte("late"), false); err == nil {
		t.Fatal("add to a deleted ledger was accepted")
	}
	for e := int64(0); e < 10; e++ {
		mustRead(t, s, 6, e, Payload(6, e, 50))
	}
}

func testCallbackOrder(t *testing.T, s storage.Storage) {
	const n = 2000
	var mu sync.Mutex
	var order []int64
	var wg sync.WaitGroup
	wg.Add(n)
	for e := int64(0); e < n; e++ {
		s.AddEntry(9, e, mk, e-1, Payload(9, e, 64), false, func(err error) {
			if err != nil {
				t.Errorf("add %d: %v", e, err)
			}
			mu.Lock()
			order = append(order, e)
			mu.Unlock()
			wg.Done()
		})
	}
	waitGroup(t, &wg)
	for i, e := range order {
		if e != int64(i) {
			t.Fatalf("callback %d was for entry %d: callbacks out of order", i, e)
		}
	}
}

func testConcurrent(t *testing.T, s storage.Storage) {
	const writers, perWriter = 8, 300
	var wg sync.WaitGroup
	for w := int64(0); w < writers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var inner sync.WaitGroup
			for e := int64(0); e < perWriter; e++ {
				inner.Add(1)
				s.AddEntry(100+w, e, mk, e-1, Payload(100+w, e, 10+int(e%500)), false, func(err error) {
					if err != nil {
						t.Errorf("add (%d,%d): %v", 100+w, e, err)
					}
					inner.Done()
				})
			}
			inner.Wait()
		}()
		wg.Add(1)
		go func() { // a reader racing the writers: must never see a wrong payload
			defer wg.Done()
			for e := int64(0); e < perWriter; e++ {
				p, err := s.ReadEntry(100+w, e)
				if err == nil && !bytes.Equal(p, Payload(100+w, e, 10+int(e%500))) {
					t.Errorf("concurrent read (%d,%d): wrong payload", 100+w, e)
				}
			}
		}()
	}
	waitGroup(t, &wg)
	for w := int64(0); w < writers; w++ {
		for e := int64(0); e < perWriter; e++ {
			mustRead(t, s, 100+w, e, Payload(100+w, e, 10+int(e%500)))
		}
	}
}

func testSizes(t *testing.T, s storage.Storage) {
	sizes := []int{0, 1, 4095, 4096, 64 << 10, 1 << 20}
	for i, n := range sizes {
		mustAdd(t, s, 11, int64(i), -1, Payload(11, int64(i), n))
	}
	for i, n := range sizes {
		mustRead(t, s, 11, int64(i), Payload(11, int64(i), n))
	}
}

func testBadIDs(t *testing.T, s storage.Storage) {
	if err := Add(t, s, -1, 0, mk, -1, []byte("x"), false); err == nil {
		t.Fatal("add with negative ledger id accepted")
	}
	if err := Add(t, s, 1, -5, mk, -1, []byte("x"), false); err == nil {
		t.Fatal("add with negative entry id accepted")
	}
}

func testClose(t *testing.T, s storage.Storage) {
	mustAdd(t, s, 1, 0, -1, []byte("a"))
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := Add(t, s, 1, 1, mk, 0, []byte("b"), false); !errors.Is(err, storage.ErrClosed) {
		t.Fatalf("add after close: %v, want ErrClosed", err)
	}
	if _, err := s.ReadEntry(1, 0); !errors.Is(err, storage.ErrClosed) {
		t.Fatalf("read after close: %v, want ErrClosed", err)
	}
}

func waitGroup(t *testing.T, wg *sync.WaitGroup) {
	t.Helper()
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(waitTimeout):
		t.Fatalf("callbacks missing after %v", waitTimeout)
	}
}
