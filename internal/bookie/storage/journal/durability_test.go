package journal

import (
	"errors"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/magnetar-io/magnetar/internal/bookie/storage/vfs"
)

// crashFS remembers, per file, how far the data was written when the last successful
// Sync began: that prefix is what survives a power loss. crash() zeroes everything after
// it, which is what a machine crash may leave of the unsynced tail. A failed Sync loses
// what it should have covered for good, as Linux does (the pages are marked clean after
// a writeback error and a later fsync reports success), so crash() zeroes that range too.
type crashFS struct {
	vfs.FS
	failSync atomic.Bool
	mu       sync.Mutex
	files    map[string]*crashFile
}

type crashFile struct {
	vfs.File
	fs      *crashFS
	name    string
	written int64 // highest end offset of a completed write
	durable int64
	lost    [][2]int64 // ranges a failed sync dropped
}

func newCrashFS() *crashFS {
	return &crashFS{FS: vfs.Default(), files: map[string]*crashFile{}}
}

func (c *crashFS) Create(name string) (vfs.File, error) {
	f, err := c.FS.Create(name)
	if err != nil {
		return nil, err
	}
	cf := &crashFile{File: f, fs: c, name: name}
	c.mu.Lock()
	c.files[name] = cf
	c.mu.Unlock()
	return cf, nil
}

// Remove forgets the file too: a rotation whose new file could not be synced removes it.
func (c *crashFS) Remove(name string) error {
	c.mu.Lock()
	delete(c.files, name)
	c.mu.Unlock()
	return c.FS.Remove(name)
}

func (f *crashFile) WriteAt(p []byte, off int64) (int, error) {
	n, err := f.File.WriteAt(p, off)
	f.fs.mu.Lock()
	f.written = max(f.written, off+int64(n))
	f.fs.mu.Unlock()
	return n, err
}

func (f *crashFile) Sync() error {
	f.fs.mu.Lock()
	covered := f.written
	f.fs.mu.Unlock()
	// A slow device: batches pile up behind a sync, as they do on a real disk.
	time.Sleep(500 * time.Microsecond)
	if f.fs.failSync.Load() {
		f.fs.mu.Lock()
		f.lost = append(f.lost, [2]int64{f.durable, covered})
		f.fs.mu.Unlock()
		return errors.New("crashfs: injected fdatasync failure")
	}
	if err := f.File.Sync(); err != nil {
		return err
	}
	f.fs.mu.Lock()
	f.durable = max(f.durable, covered)
	f.fs.mu.Unlock()
	return nil
}

// crash zeroes every file after its durable prefix.
func (c *crashFS) crash(t *testing.T) {
	t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	for name, f := range c.files {
		st, err := os.Stat(name)
		if err != nil {
			t.Fatal(err)
		}
		fh, err := os.OpenFile(name, os.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range append(f.lost, [2]int64{f.durable, st.Size()}) {
			if r[1] > r[0] {
				if _, err := fh.WriteAt(make([]byte, r[1]-r[0]), r[0]); err != nil {
					t.Fatal(err)
				}
			}
		}
		_ = fh.Close()
	}
}

// TestAckedRecordsSurviveCrash drives the writer from many goroutines while files rotate
// and fdatasync fails now and then, then throws away everything no successful sync
// covered: every record acknowledged with nil must still replay. Groups made of several
// full batches, rotation inside a group and failed syncs are all on this path.
func TestAckedRecordsSurviveCrash(t *testing.T) {
	dir := t.TempDir()
	cfs := newCrashFS()
	opts := testOptions(dir)
	opts.FS = cfs
	opts.MaxFileSize = 32 << 10 // many rotations
	opts.PreallocSize = 16 << 10
	opts.MaxGroupBytes = 4 << 10
	w, err := NewWriter(opts)
	if err != nil {
		t.Fatal(err)
	}
	const writers, per = 8, 300
	var acked sync.Map
	var failed atomic.Int64
	var wg sync.WaitGroup
	stopFlap := make(chan struct{})
	go func() { // sync fails in short bursts
		for i := 0; ; i++ {
			select {
			case <-stopFlap:
				cfs.failSync.Store(false)
				return
			default:
			}
			cfs.failSync.Store(i%50 == 7)
			time.Sleep(200 * time.Microsecond)
		}
	}()
	for g := 0; g < writers; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < per; i++ {
				e := int64(g*per + i)
				done := make(chan struct{})
				w.Append(rec(int64(g+1), e, 50+int(e%700)), func(err error) {
					if err == nil {
						acked.Store(e, true)
					} else {
						failed.Add(1)
					}
					close(done)
				})
				if i%4 == 3 {
					<-done // a mix of pipelined and waited-for appends
				}
			}
		}()
	}
	wg.Wait()
	close(stopFlap)
	// Everything queued has had its callback once Close returns.
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	cfs.crash(t)
	got, st := replayAll(t, dir)
	seen := map[int64]bool{}
	for _, r := range got {
		seen[r.EntryID] = true
	}
	n := 0
	acked.Range(func(k, _ any) bool {
		n++
		if !seen[k.(int64)] {
			t.Errorf("record %d was acknowledged but is not in the synced journal", k)
		}
		return true
	})
	if n == 0 || st.Files < 3 {
		t.Fatalf("acked %d, files %d: the test did not exercise rotation", n, st.Files)
	}
	t.Logf("acked %d, failed %d, files %d", n, failed.Load(), st.Files)
}
