package index

import (
	"errors"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	fvfs "github.com/magnetar-io/magnetar/internal/bookie/storage/vfs"
)

// TestCommitStopsWaitingWhenTheIndexParks: a background job that parks holds Pebble's
// mutex for good. A commit that had passed the park check before it and needs a fresh
// memtable (a batch above Pebble's large-batch threshold always does) used to wait on
// that mutex for ever, and the bookie's flusher and Close with it. It must return
// ErrUnavailable instead, and so must every commit after.
func TestCommitStopsWaitingWhenTheIndexParks(t *testing.T) {
	ffs := fvfs.NewFaultFS(fvfs.Default())
	fatal := make(chan error, 1)
	ix, err := Open(t.TempDir(), Options{FS: fvfs.PebbleFS(ffs), CacheBytes: 1 << 20,
		OnBackgroundError: func(err error, isFatal bool) {
			if isFatal {
				fatal <- err
			}
		}}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	b := ix.NewBatch()
	b.PutLocation(1, 0, Location{Log: 1, Size: 10})
	if err := b.Commit(); err != nil {
		t.Fatal(err)
	}

	// Inside the next commit, after its park check: the MANIFEST sync of a flush fails,
	// and Pebble's flush job parks holding its mutex.
	ix.testBeforeApply = func() {
		ix.testBeforeApply = nil
		ffs.SetOnly(func(name string) bool { return strings.HasPrefix(filepath.Base(name), "MANIFEST") })
		ffs.SetSyncFails(true)
		if _, err := ix.db.AsyncFlush(); err != nil {
			t.Errorf("flush: %v", err)
		}
		<-fatal
	}
	big := ix.NewBatch()
	for e := int64(0); e < 200_000; e++ { // ~6 MiB: above half of the 8 MiB memtable
		big.PutLocation(2, e, Location{Log: 1, Offset: uint32(e), Size: 10})
	}
	done := make(chan error, 1)
	go func() { done <- big.Commit() }()
	select {
	case err := <-done:
		if !errors.Is(err, ErrUnavailable) {
			t.Fatalf("commit racing the park: %v, want ErrUnavailable", err)
		}
	case <-time.After(2 * time.Minute): // a hang detector, not a speed assertion
		t.Fatal("a commit racing a parked background job never returned")
	}

	after := ix.NewBatch()
	after.PutLocation(3, 0, Location{Log: 1, Size: 10})
	if err := after.Commit(); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("commit after the park: %v, want ErrUnavailable", err)
	}
	if loc, ok, err := ix.Get(1, 0); err != nil || !ok || loc.Size != 10 {
		t.Fatalf("read after the park: %+v %v %v", loc, ok, err)
	}
	if err := ix.Close(); err != nil { // must not wait for the parked job
		t.Fatal(err)
	}
}
