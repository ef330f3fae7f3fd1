package journal

import (
	"sync"
	"testing"

	"github.com/magnetar-io/magnetar/internal/bookie/storage/vfs"
)

// countFS counts, per file, the syncs and the writebacks the writer asks for.
type countFS struct {
	vfs.FS
	mu         sync.Mutex
	syncs      map[string]int
	writebacks int
}

type countFile struct {
	vfs.File
	fs   *countFS
	name string
}

func (c *countFS) Create(name string) (vfs.File, error) {
	f, err := c.FS.Create(name)
	if err != nil {
		return nil, err
	}
	return &countFile{File: f, fs: c, name: name}, nil
}

func (f *countFile) Sync() error {
	f.fs.mu.Lock()
	f.fs.syncs[f.name]++
	f.fs.mu.Unlock()
	return f.File.Sync()
}

func (f *countFile) Writeback(end int64) error {
	f.fs.mu.Lock()
	f.fs.writebacks++
	f.fs.mu.Unlock()
	return nil
}

// TestNoSyncDataWritesBackAndRotatesWithoutSync: with SyncData off, the writer never waits
// for the disk on its data: each file is synced once, for its header when it is created,
// not before a rotation (that synced up to journalMaxSizeMB at once and stalled adds), and
// writeback is started every WritebackBytes instead. Every record still replays.
func TestNoSyncDataWritesBackAndRotatesWithoutSync(t *testing.T) {
	dir := t.TempDir()
	cfs := &countFS{FS: vfs.Default(), syncs: map[string]int{}}
	opts := testOptions(dir)
	opts.FS, opts.SyncData = cfs, false
	opts.MaxFileSize, opts.PreallocSize, opts.MaxGroupBytes = 64<<10, 16<<10, 4<<10
	opts.WritebackBytes = 8 << 10
	w, err := NewWriter(opts)
	if err != nil {
		t.Fatal(err)
	}
	writeRecords(t, w, 0, 1500) // about 380 KiB: several rotations
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	cfs.mu.Lock()
	defer cfs.mu.Unlock()
	if len(cfs.syncs) < 4 {
		t.Fatalf("%d journal files, want several rotations", len(cfs.syncs))
	}
	for name, n := range cfs.syncs {
		if n != 1 {
			t.Errorf("%s synced %d times, want once (its header)", name, n)
		}
	}
	// At most one per group (groups vary with timing), at least one per file's 64 KiB.
	if cfs.writebacks < len(cfs.syncs)-1 {
		t.Errorf("%d writebacks over %d files in 8 KiB steps", cfs.writebacks, len(cfs.syncs))
	}
	if got, _ := replayAll(t, dir); len(got) != 1500 {
		t.Fatalf("replayed %d records, want 1500", len(got))
	}
}
