package journal

import (
	"sync"
	"testing"
	"time"

	"github.com/magnetar-io/magnetar/internal/bookie/storage/vfs"
)

// holdFS makes SyncDir wait while hold is set, as a directory sync waits behind a disk's
// queue, and reports each SyncDir as it starts.
type holdFS struct {
	vfs.FS
	mu      sync.Mutex
	hold    bool
	release chan struct{}
	started chan struct{} // one value per SyncDir call, sent as it starts waiting or runs
}

func (h *holdFS) SyncDir(dir string) error {
	h.mu.Lock()
	held, release := h.hold, h.release
	h.mu.Unlock()
	h.started <- struct{}{}
	if held {
		<-release
	}
	return h.FS.SyncDir(dir)
}

// TestRotationDoesNotWaitForNextFileSyncs: the file after the current one is made ahead
// (its header and directory synced on another goroutine), so a rotation only switches
// files and adds across it complete while the sync of the following file is stuck behind
// the disk. Every record still replays, and the unused file made ahead is removed on
// Close.
func TestRotationDoesNotWaitForNextFileSyncs(t *testing.T) {
	dir := t.TempDir()
	hfs := &holdFS{FS: vfs.Default(), release: make(chan struct{}), started: make(chan struct{}, 16)}
	opts := testOptions(dir)
	opts.FS = hfs
	w, err := NewWriter(opts)
	if err != nil {
		t.Fatal(err)
	}
	// File 1's own directory sync, then the one of file 2 made ahead.
	for i := 0; i < 2; i++ {
		select {
		case <-hfs.started:
		case <-time.After(30 * time.Second):
			t.Fatalf("%d directory syncs after NewWriter, want 2: the next file is not made ahead", i)
		}
	}
	names, _ := vfs.Default().List(dir)
	if len(names) != 2 || names[1] != FileName(2) {
		t.Fatalf("journal files after NewWriter: %v, want files 1 and 2", names)
	}
	hfs.mu.Lock()
	hfs.hold = true
	hfs.mu.Unlock()

	// About 1.2 files of 1,000-byte records: one rotation, into file 2.
	const n = 300
	done := make(chan error, n)
	for e := 0; e < n; e++ {
		w.Append(rec(1, int64(e), 1000), func(err error) { done <- err })
	}
	for e := 0; e < n; e++ {
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("append: %v", err)
			}
		case <-time.After(60 * time.Second):
			t.Fatalf("%d of %d adds acknowledged: the rotation waited for a held directory sync", e, n)
		}
	}
	// The rotation started making file 3, whose directory sync is the one held.
	select {
	case <-hfs.started:
	case <-time.After(30 * time.Second):
		t.Fatal("no directory sync for file 3 after the rotation")
	}
	close(hfs.release)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	got, st := replayAll(t, dir)
	if len(got) != n || st.Files != 2 {
		t.Fatalf("replayed %d records from %d files, want %d from 2", len(got), st.Files, n)
	}
	names, _ = vfs.Default().List(dir)
	if len(names) != 2 {
		t.Fatalf("journal files after Close: %v, want the unused file 3 removed", names)
	}
}
