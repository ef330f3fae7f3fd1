package vfs

import (
	"fmt"
	"sync"
	"sync/atomic"
	"syscall"
)

// FaultFS wraps an FS and injects faults that tests switch on and off at run time:
// a full disk (writes, preallocation and creation fail with ENOSPC and Usage reports 1)
// and failing syncs (EIO). Otherwise Usage reports an empty disk, whatever the real one
// holds: a test machine's disk above diskUsageLwmThreshold would otherwise keep a bookie
// that was made full read-only after SetFull(false). Reads are never failed, so tests can check that a read-only
// bookie keeps serving them.
type FaultFS struct {
	FS
	full      atomic.Bool
	syncFails atomic.Bool
	writes    atomic.Int64
	only      atomic.Pointer[func(name string) bool] // nil: faults hit every file

	undoMu sync.Mutex
	undo   *undoLog // non-nil: unsynced writes are recorded (undo.go)
}

// NewFaultFS wraps inner.
func NewFaultFS(inner FS) *FaultFS { return &FaultFS{FS: inner} }

// SetFull makes the disk full (true) or gives the space back (false).
func (f *FaultFS) SetFull(full bool) { f.full.Store(full) }

// SetSyncFails makes every Sync fail with EIO.
func (f *FaultFS) SetSyncFails(fail bool) { f.syncFails.Store(fail) }

// SetOnly limits the full-disk and sync faults to the files match accepts (a test fails
// only the Pebble index's files, say); nil: every file. Usage still reports a full disk.
func (f *FaultFS) SetOnly(match func(name string) bool) {
	if match == nil {
		f.only.Store(nil)
		return
	}
	f.only.Store(&match)
}

// Writes counts successful writes (tests use it to wait for activity).
func (f *FaultFS) Writes() int64 { return f.writes.Load() }

func (f *FaultFS) hits(name string) bool {
	m := f.only.Load()
	return m == nil || (*m)(name)
}

// fullFor and syncFailsFor tell whether the fault is on for the file name.
func (f *FaultFS) fullFor(name string) bool      { return f.full.Load() && f.hits(name) }
func (f *FaultFS) syncFailsFor(name string) bool { return f.syncFails.Load() && f.hits(name) }

func (f *FaultFS) errSync(name string) error {
	return fmt.Errorf("vfs fault: sync %s: %w", name, syscall.EIO)
}

func (f *FaultFS) errFull(op, name string) error {
	return fmt.Errorf("vfs fault: %s %s: %w", op, name, syscall.ENOSPC)
}

// Create implements FS.
func (f *FaultFS) Create(name string) (File, error) {
	if f.fullFor(name) {
		return nil, f.errFull("create", name)
	}
	file, err := f.FS.Create(name)
	if err != nil {
		return nil, err
	}
	return &faultFile{File: file, fs: f, name: name}, nil
}

// OpenReadWrite implements FS.
func (f *FaultFS) OpenReadWrite(name string) (File, error) {
	file, err := f.FS.OpenReadWrite(name)
	if err != nil {
		return nil, err
	}
	return &faultFile{File: file, fs: f, name: name}, nil
}

// WriteFileAtomic implements FS.
func (f *FaultFS) WriteFileAtomic(name string, data []byte) error {
	if f.fullFor(name) {
		return f.errFull("write", name)
	}
	if f.syncFailsFor(name) { // it syncs the file and the directory
		return f.errSync(name)
	}
	return f.FS.WriteFileAtomic(name, data)
}

// Usage implements FS.
func (f *FaultFS) Usage(dir string) (float64, error) {
	if f.full.Load() {
		return 1, nil
	}
	return 0, nil
}

type faultFile struct {
	File
	fs   *FaultFS
	name string
}

func (f *faultFile) WriteAt(p []byte, off int64) (int, error) {
	if f.fs.fullFor(f.name) {
		// A full disk often takes part of the write: leave a torn prefix behind, as the
		// real one would, so recovery code sees it.
		n, _ := f.File.WriteAt(p[:len(p)/2], off)
		return n, f.fs.errFull("write", f.name)
	}
	if u := f.fs.undoLog(); u != nil {
		if err := u.before(f.File, f.name, off, len(p)); err != nil {
			return 0, fmt.Errorf("vfs fault: recording the undo of a write to %s: %w", f.name, err)
		}
	}
	n, err := f.File.WriteAt(p, off)
	if err == nil {
		f.fs.writes.Add(1)
	}
	return n, err
}

func (f *faultFile) Preallocate(off, size int64) error {
	if f.fs.fullFor(f.name) {
		return f.fs.errFull("preallocate", f.name)
	}
	if u := f.fs.undoLog(); u != nil {
		// Preallocation grows the file with zeros: undone by the size it records.
		if err := u.before(f.File, f.name, off, 0); err != nil {
			return err
		}
	}
	return f.File.Preallocate(off, size)
}

func (f *faultFile) Sync() error {
	if f.fs.syncFailsFor(f.name) {
		return f.fs.errSync(f.name)
	}
	if f.fs.fullFor(f.name) {
		return f.fs.errFull("sync", f.name)
	}
	if err := f.File.Sync(); err != nil {
		return err
	}
	if u := f.fs.undoLog(); u != nil {
		u.synced(f.name)
	}
	return nil
}
