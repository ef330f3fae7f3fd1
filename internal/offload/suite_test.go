package offload

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/magnetar-io/magnetar/internal/ledger"
)

// memSource is a closed ledger in memory with a fault hook.
type memSource struct {
	id      int64
	entries [][]byte

	mu      sync.Mutex
	reads   int
	failAt  int         // fail the read with this number (1-based), 0 = never
	failErr error       // what the failing read returns
	before  func(n int) // called before read n
}

func (s *memSource) ID() int64               { return s.id }
func (s *memSource) LastAddConfirmed() int64 { return int64(len(s.entries)) - 1 }
func (s *memSource) Read(_ context.Context, first, last int64) ([]ledger.Entry, error) {
	s.mu.Lock()
	s.reads++
	n := s.reads
	before := s.before
	s.mu.Unlock()
	if before != nil {
		before(n)
	}
	if s.failAt == n {
		return nil, s.failErr
	}
	if first < 0 || last >= int64(len(s.entries)) || first > last {
		return nil, ledger.ErrNoSuchEntry
	}
	out := make([]ledger.Entry, 0, last-first+1)
	for e := first; e <= last; e++ {
		out = append(out, ledger.Entry{LedgerID: s.id, EntryID: e, Data: s.entries[e]})
	}
	return out, nil
}

// newSource makes n entries of pseudo-random sizes in [minSize, maxSize].
func newSource(id int64, n, minSize, maxSize int, seed uint64) *memSource {
	r := rand.New(rand.NewPCG(seed, uint64(id)))
	s := &memSource{id: id}
	for i := range n {
		sz := minSize + r.IntN(maxSize-minSize+1)
		b := make([]byte, sz)
		for j := range b {
			b[j] = byte(r.Uint32())
		}
		if sz >= 8 {
			copy(b, fmt.Sprintf("%08d", i%100000000))
		}
		s.entries = append(s.entries, b)
	}
	return s
}

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// checkRead reads first..last and compares every entry byte for byte.
func checkRead(t *testing.T, h ReadHandle, src *memSource, first, last int64) {
	t.Helper()
	es, err := h.Read(testCtx(t), first, last)
	if err != nil {
		t.Fatalf("read %d..%d: %v", first, last, err)
	}
	if int64(len(es)) != last-first+1 {
		t.Fatalf("read %d..%d: %d entries", first, last, len(es))
	}
	for i, e := range es {
		want := first + int64(i)
		if e.EntryID != want || e.LedgerID != src.id || !bytes.Equal(e.Data, src.entries[want]) {
			t.Fatalf("read %d..%d: entry %d is (%d,%d) with %d bytes, want (%d,%d) with %d bytes",
				first, last, i, e.LedgerID, e.EntryID, len(e.Data), src.id, want, len(src.entries[want]))
		}
	}
}

// runSuite is the conformance suite every driver passes. blockSize is the configured
// block size (the S3 drivers need >= 5 MiB).
func runSuite(t *testing.T, o Offloader, blockSize int) {
	ctx := testCtx(t)
	if err := o.Check(ctx); err != nil {
		t.Fatalf("Check: %v", err)
	}
	t.Run("RoundTrip", func(t *testing.T) {
		// About 2.5 blocks of entries from 1 byte to 40 KiB, so blocks and chunks both break.
		n := max(200, 5*blockSize/2/20000)
		src := newSource(7, n, 1, 40000, 1)
		ref := Ref{LedgerID: 7, UUID: NewUUID(), Topic: "t/ns/persistent/a"}
		res, err := o.Offload(ctx, src, ref, map[string]string{"ManagedLedgerName": "t/ns/persistent/a"})
		if err != nil {
			t.Fatalf("Offload: %v", err)
		}
		if res.Entries != int64(n) || res.Blocks < 2 {
			t.Fatalf("result %+v, want %d entries in >= 2 blocks", res, n)
		}
		ref.Driver, ref.Metadata = o.DriverName(), o.DriverMetadata()
		h, err := o.Open(ctx, ref)
		if err != nil {
			t.Fatalf("Open: %v", err)
		}
		if h.LastAddConfirmed() != int64(n-1) || !h.IsClosed() || h.Metadata()["ManagedLedgerName"] != "t/ns/persistent/a" {
			t.Fatalf("handle: lac %d closed %v metadata %v", h.LastAddConfirmed(), h.IsClosed(), h.Metadata())
		}
		var total int64
		for _, e := range src.entries {
			total += int64(len(e))
		}
		if h.Length() != total {
			t.Fatalf("length %d, want %d", h.Length(), total)
		}
		checkRead(t, h, src, 0, int64(n-1))
		r := rand.New(rand.NewPCG(3, 4))
		for range 30 {
			a := r.Int64N(int64(n))
			b := a + r.Int64N(min(int64(n)-a, 150))
			checkRead(t, h, src, a, b)
		}
		checkRead(t, h, src, int64(n-1), int64(n-1))
		if _, err := h.Read(ctx, 0, int64(n)); !errors.Is(err, ledger.ErrNoSuchEntry) {
			t.Fatalf("read past the end: %v", err)
		}
		if _, err := h.Read(ctx, 5, 4); !errors.Is(err, ledger.ErrBadArgument) {
			t.Fatalf("read backwards: %v", err)
		}
		if _, err := h.WaitLastAddConfirmed(ctx, int64(n-1)); !errors.Is(err, ledger.ErrClosed) {
			t.Fatalf("wait on a closed ledger: %v", err)
		}
		if err := o.Delete(ctx, ref); err != nil {
			t.Fatalf("Delete: %v", err)
		}
		if _, err := o.Open(ctx, ref); !errors.Is(err, ErrNotFound) {
			t.Fatalf("Open after Delete: %v", err)
		}
		if err := o.Delete(ctx, ref); err != nil {
			t.Fatalf("Delete again: %v", err)
		}
	})
	t.Run("EmptyAndOneEntry", func(t *testing.T) {
		for _, n := range []int{0, 1} {
			src := newSource(int64(10+n), n, 0, 100, 2)
			ref := Ref{LedgerID: src.id, UUID: NewUUID()}
			if _, err := o.Offload(ctx, src, ref, nil); err != nil {
				t.Fatalf("Offload of %d entries: %v", n, err)
			}
			h, err := o.Open(ctx, ref)
			if err != nil {
				t.Fatalf("Open: %v", err)
			}
			if h.LastAddConfirmed() != int64(n-1) {
				t.Fatalf("lac %d", h.LastAddConfirmed())
			}
			if n == 1 {
				checkRead(t, h, src, 0, 0)
			}
			if err := o.Delete(ctx, ref); err != nil {
				t.Fatal(err)
			}
		}
	})
	t.Run("SourceFailsMidway", func(t *testing.T) {
		src := newSource(20, 300, 100, 20000, 5)
		src.failAt, src.failErr = 2, ledger.ErrCorrupt
		ref := Ref{LedgerID: 20, UUID: NewUUID()}
		if _, err := o.Offload(ctx, src, ref, nil); !errors.Is(err, ledger.ErrCorrupt) {
			t.Fatalf("Offload with a failing bookie read: %v", err)
		}
		if _, err := o.Open(ctx, ref); !errors.Is(err, ErrNotFound) {
			t.Fatalf("a failed offload left an object: %v", err)
		}
		// A retry under a new uuid succeeds.
		src.failAt = 0
		ref2 := Ref{LedgerID: 20, UUID: NewUUID()}
		if _, err := o.Offload(ctx, src, ref2, nil); err != nil {
			t.Fatal(err)
		}
		h, err := o.Open(ctx, ref2)
		if err != nil {
			t.Fatal(err)
		}
		checkRead(t, h, src, 0, 299)
		_ = o.Delete(ctx, ref2)
	})
	t.Run("BadArguments", func(t *testing.T) {
		src := newSource(30, 3, 1, 10, 6)
		if _, err := o.Offload(ctx, src, Ref{LedgerID: 30, UUID: "../../etc"}, nil); !errors.Is(err, ErrConfig) {
			t.Fatalf("bad uuid: %v", err)
		}
		if _, err := o.Offload(ctx, src, Ref{LedgerID: 31, UUID: NewUUID()}, nil); !errors.Is(err, ErrConfig) {
			t.Fatalf("wrong ledger id: %v", err)
		}
		if _, err := o.Open(ctx, Ref{LedgerID: 30, UUID: NewUUID()}); !errors.Is(err, ErrNotFound) {
			t.Fatalf("open of a ledger never offloaded: %v", err)
		}
	})
}
