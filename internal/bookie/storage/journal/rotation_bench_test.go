package journal

import (
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/magnetar-io/magnetar/internal/bookie/storage/vfs"
)

// rollFS timestamps, per rotation, the close of the old file and the first record write
// into the new one: the gap is how long the writer (and every add behind it) waited for
// the rotation.
type rollFS struct {
	vfs.FS
	mu     sync.Mutex
	closed time.Time
	gaps   []time.Duration
}

type rollFile struct {
	vfs.File
	fs    *rollFS
	wrote bool
}

func (r *rollFS) Create(name string) (vfs.File, error) {
	f, err := r.FS.Create(name)
	if err != nil {
		return nil, err
	}
	return &rollFile{File: f, fs: r}, nil
}

func (f *rollFile) WriteAt(p []byte, off int64) (int, error) {
	if off == HeaderSize && !f.wrote {
		f.wrote = true
		f.fs.mu.Lock()
		if !f.fs.closed.IsZero() {
			f.fs.gaps = append(f.fs.gaps, time.Since(f.fs.closed))
		}
		f.fs.mu.Unlock()
	}
	return f.File.WriteAt(p, off)
}

func (f *rollFile) Close() error {
	if f.wrote {
		f.fs.mu.Lock()
		f.fs.closed = time.Now()
		f.fs.mu.Unlock()
	}
	return f.File.Close()
}

// BenchmarkRotationTail measures what a rotation costs the adds behind it without
// journalSyncData (D2): 1 KiB records into 4 MiB files, while another goroutine keeps the
// disk's queue busy the way the entry-log flush and the kernel's writeback do (8 MiB
// writes, each fdatasync'd). It reports the p99.9 and the max of Append -> callback, and
// the mean and max time the writer spent switching files (rotation-µs: old file closed
// to the first record written into the new one). Before the next file was made ahead,
// each rotation's header and directory syncs waited behind that queue on the add path.
//
//	go test -tags pebblegozstd -run '^$' -bench RotationTail -benchtime 40000x ./internal/bookie/storage/journal/
func BenchmarkRotationTail(b *testing.B) {
	dir := b.TempDir()
	rfs := &rollFS{FS: vfs.Default()}
	opts := Options{
		FS: rfs, Dir: filepath.Join(dir, "journal"), FirstFile: 1, SyncData: false,
		MaxGroupWait: time.Millisecond, MaxGroupBytes: 64 << 10, QueueBytes: 4 << 20,
		MaxFileSize: 4 << 20, PreallocSize: 1 << 20,
	}
	if err := os.MkdirAll(opts.Dir, 0o755); err != nil {
		b.Fatal(err)
	}
	stop := make(chan struct{})
	var pressure sync.WaitGroup
	pressure.Add(1)
	go func() {
		defer pressure.Done()
		f, err := os.Create(filepath.Join(dir, "pressure"))
		if err != nil {
			b.Error(err)
			return
		}
		defer f.Close()
		buf := make([]byte, 8<<20)
		for off := int64(0); ; off += int64(len(buf)) {
			select {
			case <-stop:
				return
			default:
			}
			if off > 256<<20 {
				off = 0
			}
			_, _ = f.WriteAt(buf, off)
			_ = f.Sync()
		}
	}()
	w, err := NewWriter(opts)
	if err != nil {
		b.Fatal(err)
	}
	lat := make([]time.Duration, b.N)
	var wg sync.WaitGroup
	payload := make([]byte, 1024)
	b.SetBytes(int64(len(payload)))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		wg.Add(1)
		t0 := time.Now()
		w.Append(Record{Kind: KindAdd, LedgerID: 1, EntryID: int64(i), LAC: int64(i) - 1, MasterKey: []byte("mk"), Payload: payload},
			func(error) { lat[i] = time.Since(t0); wg.Done() })
		// About 20k adds/s: a steady rate, so a stall shows as latency, not as a lower rate.
		if i%20 == 19 {
			time.Sleep(time.Millisecond)
		}
	}
	wg.Wait()
	b.StopTimer()
	close(stop)
	pressure.Wait()
	_ = w.Close()
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)*999/1000].Microseconds()), "p99.9-µs")
	b.ReportMetric(float64(lat[len(lat)-1].Microseconds()), "max-µs")
	if len(rfs.gaps) > 0 {
		var sum time.Duration
		for _, g := range rfs.gaps {
			sum += g
		}
		b.ReportMetric(float64(sum.Microseconds())/float64(len(rfs.gaps)), "rotation-mean-µs")
		b.ReportMetric(float64(slices.Max(rfs.gaps).Microseconds()), "rotation-max-µs")
	}
}
