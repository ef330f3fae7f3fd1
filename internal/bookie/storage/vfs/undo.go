package vfs

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
)

// Lost unsynced writes. A SIGKILLed process loses nothing of what it wrote (the page cache
// survives it); a power failure or kernel crash loses every write that no fsync covered.
// With SetUndoDir, FaultFS records, before each write, the bytes it overwrites and the
// file's size in an undo log per file (in that directory, not next to the data), and
// forgets the log when a Sync of the file succeeds. RevertUnsynced, run by a test between a
// SIGKILL and the restart, applies the logs backwards, so the files are as the last
// successful syncs left them: the loss a crash of the machine would cause (Jepsen's lazyfs
// clear-cache). The undo log is written before the data, and both sit in the page cache,
// so a SIGKILL at any point leaves a log that covers every unsynced write.
//
// Record layout (big-endian): u64 offset, u32 length n of the write, i64 file size before
// the write, u32 length m of the old bytes that existed there (m <= n), [m] old bytes.

type undoLog struct {
	mu    sync.Mutex
	dir   string
	files map[string]*os.File // data path -> its open undo log
}

func undoName(dir, path string) string {
	abs, err := filepath.Abs(path)
	if err != nil {
		abs = path
	}
	return filepath.Join(dir, url.PathEscape(abs)+".undo")
}

// SetUndoDir turns the recording of unsynced writes on (dir != "") or off.
func (f *FaultFS) SetUndoDir(dir string) error {
	if dir != "" {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
	}
	f.undoMu.Lock()
	defer f.undoMu.Unlock()
	if dir == "" {
		f.undo = nil
		return nil
	}
	if f.undo == nil || f.undo.dir != dir {
		f.undo = &undoLog{dir: dir, files: map[string]*os.File{}}
	}
	return nil
}

func (f *FaultFS) undoLog() *undoLog {
	f.undoMu.Lock()
	defer f.undoMu.Unlock()
	return f.undo
}

// sizedReaderAt is what the undo log reads of a file before a write: its size and the
// bytes about to be overwritten.
type sizedReaderAt interface {
	io.ReaderAt
	Size() (int64, error)
}

// before records what a write of n bytes at off to file (path name) overwrites.
func (u *undoLog) before(file sizedReaderAt, name string, off int64, n int) error {
	size, err := file.Size()
	if err != nil {
		return err
	}
	old := make([]byte, max(0, min(int64(n), size-off)))
	if len(old) > 0 {
		if _, err := file.ReadAt(old, off); err != nil && !errors.Is(err, io.EOF) {
			return err
		}
	}
	rec := binary.BigEndian.AppendUint64(nil, uint64(off))
	rec = binary.BigEndian.AppendUint32(rec, uint32(n))
	rec = binary.BigEndian.AppendUint64(rec, uint64(size))
	rec = binary.BigEndian.AppendUint32(rec, uint32(len(old)))
	rec = append(rec, old...)
	u.mu.Lock()
	defer u.mu.Unlock()
	lf := u.files[name]
	if lf == nil {
		if lf, err = os.OpenFile(undoName(u.dir, name), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644); err != nil {
			return err
		}
		u.files[name] = lf
	}
	_, err = lf.Write(rec)
	return err
}

// synced forgets the undo log of name: everything written to it so far is durable.
func (u *undoLog) synced(name string) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if lf := u.files[name]; lf != nil {
		_ = lf.Truncate(0)
	}
}

// RevertUnsynced applies every undo log in dir to its data file, newest record first, and
// removes the logs: the files then hold what their last successful syncs made durable.
// The process that wrote them must be dead.
func RevertUnsynced(dir string) error {
	logs, err := filepath.Glob(filepath.Join(dir, "*.undo"))
	if err != nil {
		return err
	}
	sort.Strings(logs)
	var errs []error
	for _, lg := range logs {
		data, err := url.PathUnescape(strings.TrimSuffix(filepath.Base(lg), ".undo"))
		if err != nil {
			errs = append(errs, fmt.Errorf("vfs: undo log %s: %w", lg, err))
			continue
		}
		if err := revertOne(lg, data); err != nil {
			errs = append(errs, fmt.Errorf("vfs: revert %s: %w", data, err))
		}
	}
	return errors.Join(errs...)
}

func revertOne(log, data string) error {
	b, err := os.ReadFile(log)
	if err != nil {
		return err
	}
	type rec struct {
		off, size int64
		old       []byte
	}
	var recs []rec
	for len(b) >= 24 {
		r := rec{off: int64(binary.BigEndian.Uint64(b)), size: int64(binary.BigEndian.Uint64(b[12:]))}
		m := int(binary.BigEndian.Uint32(b[20:]))
		if len(b) < 24+m {
			break // the last record was cut short by the kill: its write never started
		}
		r.old = b[24 : 24+m]
		recs = append(recs, r)
		b = b[24+m:]
	}
	if len(recs) > 0 {
		f, err := os.OpenFile(data, os.O_RDWR, 0)
		if errors.Is(err, os.ErrNotExist) {
			return os.Remove(log)
		}
		if err != nil {
			return err
		}
		for i := len(recs) - 1; i >= 0; i-- {
			r := recs[i]
			if _, err := f.WriteAt(r.old, r.off); err != nil {
				f.Close()
				return err
			}
			if err := f.Truncate(r.size); err != nil {
				f.Close()
				return err
			}
		}
		if err := f.Close(); err != nil {
			return err
		}
	}
	return os.Remove(log)
}
