package vfs

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
)

// File is an open file of the storage.
type File interface {
	io.ReaderAt
	io.WriterAt
	// Sync makes the written data durable (fdatasync where available).
	Sync() error
	// Preallocate reserves size bytes from off so later writes there do not grow the file.
	Preallocate(off, size int64) error
	// Size returns the file's current size.
	Size() (int64, error)
	Close() error
}

// Writebacker is a File that can start writeback early. Writeback(end) waits for the
// writeback already started on [0, end) and starts it for the dirty pages there, without
// waiting for those or flushing the device cache (Linux sync_file_range with WAIT_BEFORE
// and WRITE). It makes nothing durable; a later Sync still must. Files that lack it just
// leave all the work to Sync.
type Writebacker interface {
	Writeback(end int64) error
}

// WritebackPacer starts writeback of an append-only file every Step bytes (Step <= 0: never),
// so the kernel never holds more than about Step of its dirty pages plus the chunk in
// flight. The entry logs use it during flushes and the journal when it does not sync.
type WritebackPacer struct {
	Step int64
	end  int64 // end of the range whose writeback was last started
}

// Advance starts writeback up to off when Step bytes were written since the last start.
// Files that are not Writebackers are left to their Sync.
func (p *WritebackPacer) Advance(f File, off int64) error {
	if p.Step <= 0 || off-p.end < p.Step {
		return nil
	}
	if wb, ok := f.(Writebacker); ok {
		if err := wb.Writeback(off); err != nil {
			return err
		}
	}
	p.end = off
	return nil
}

// Reset starts over for a new file.
func (p *WritebackPacer) Reset() { p.end = 0 }

// FS is the file system the storage uses.
type FS interface {
	// Create creates a new file for reading and writing; it fails if the file exists.
	Create(name string) (File, error)
	// OpenReadWrite opens an existing file for reading and writing.
	OpenReadWrite(name string) (File, error)
	// ReadFile and WriteFileAtomic handle small files (cookies): the write goes to a
	// temporary file that is synced and renamed over name, then the directory is synced.
	ReadFile(name string) ([]byte, error)
	WriteFileAtomic(name string, data []byte) error
	Remove(name string) error
	MkdirAll(dir string) error
	// List returns the names (not paths) in dir, sorted.
	List(dir string) ([]string, error)
	// SyncDir makes creations and removals in dir durable.
	SyncDir(dir string) error
	// Usage returns the used fraction (0..1) of the file system holding dir.
	Usage(dir string) (float64, error)
}

// Default returns the operating system's file system.
func Default() FS { return osFS{} }

type osFS struct{}

type osFile struct{ *os.File }

func (f osFile) Sync() error { return fdatasync(f.File) }

// Writeback implements Writebacker.
func (f osFile) Writeback(end int64) error { return writeback(f.File, end) }

func (f osFile) Preallocate(off, size int64) error { return preallocate(f.File, off, size) }

func (f osFile) Size() (int64, error) {
	st, err := f.Stat()
	if err != nil {
		return 0, err
	}
	return st.Size(), nil
}

func (osFS) Create(name string) (File, error) {
	f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return nil, err
	}
	return osFile{f}, nil
}

func (osFS) OpenReadWrite(name string) (File, error) {
	f, err := os.OpenFile(name, os.O_RDWR, 0)
	if err != nil {
		return nil, err
	}
	return osFile{f}, nil
}

func (osFS) ReadFile(name string) ([]byte, error) { return os.ReadFile(name) }

func (fs osFS) WriteFileAtomic(name string, data []byte) error {
	tmp := name + ".tmp"
	_ = os.Remove(tmp)
	f, err := os.OpenFile(tmp, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	_, werr := f.Write(data)
	serr := f.Sync()
	cerr := f.Close()
	if err := errors.Join(werr, serr, cerr); err != nil {
		_ = os.Remove(tmp)
		return err
	}
	if err := os.Rename(tmp, name); err != nil {
		return err
	}
	return fs.SyncDir(filepath.Dir(name))
}

func (osFS) Remove(name string) error { return os.Remove(name) }

func (osFS) MkdirAll(dir string) error { return os.MkdirAll(dir, 0o755) }

func (osFS) List(dir string) ([]string, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	names := make([]string, 0, len(ents))
	for _, e := range ents {
		names = append(names, e.Name())
	}
	sort.Strings(names)
	return names, nil
}

func (osFS) SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("vfs: sync dir %s: %w", dir, err)
	}
	return nil
}

func (osFS) Usage(dir string) (float64, error) { return usage(dir) }
