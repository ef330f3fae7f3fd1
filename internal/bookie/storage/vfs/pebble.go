package vfs

import (
	"fmt"

	pvfs "github.com/cockroachdb/pebble/v2/vfs"
)

// Pebble's files on the fault layer. The bookie's index is a Pebble database, which does
// its I/O through its own vfs.FS; PebbleFS puts that on the same FaultFS as the journal and
// the entry logs, so one switch fails them all (a full disk, failing syncs) and, with an
// undo directory, a crash loses the index's unsynced writes as it loses theirs.

// PebbleFS is the Pebble file system matching fs: the operating system's, wrapped with the
// faults of fs when it is a *FaultFS.
func PebbleFS(fs FS) pvfs.FS {
	if f, ok := fs.(*FaultFS); ok {
		return &pebbleFS{FS: pvfs.Default, f: f}
	}
	return pvfs.Default
}

type pebbleFS struct {
	pvfs.FS
	f *FaultFS
}

func (p *pebbleFS) wrap(file pvfs.File, name string) pvfs.File {
	return &pebbleFile{File: file, fs: p.f, name: name}
}

// Create implements pvfs.FS.
func (p *pebbleFS) Create(name string, cat pvfs.DiskWriteCategory) (pvfs.File, error) {
	if p.f.fullFor(name) {
		return nil, p.f.errFull("create", name)
	}
	file, err := p.FS.Create(name, cat)
	if err != nil {
		return nil, err
	}
	return p.wrap(file, name), nil
}

// OpenReadWrite implements pvfs.FS.
func (p *pebbleFS) OpenReadWrite(name string, cat pvfs.DiskWriteCategory, opts ...pvfs.OpenOption) (pvfs.File, error) {
	file, err := p.FS.OpenReadWrite(name, cat, opts...)
	if err != nil {
		return nil, err
	}
	return p.wrap(file, name), nil
}

// ReuseForWrite implements pvfs.FS (Pebble recycles WAL files this way).
func (p *pebbleFS) ReuseForWrite(oldname, newname string, cat pvfs.DiskWriteCategory) (pvfs.File, error) {
	if p.f.fullFor(newname) {
		return nil, p.f.errFull("reuse", newname)
	}
	file, err := p.FS.ReuseForWrite(oldname, newname, cat)
	if err != nil {
		return nil, err
	}
	return p.wrap(file, newname), nil
}

// Remove implements pvfs.FS: a removed file's pending undo records no longer apply.
func (p *pebbleFS) Remove(name string) error {
	if err := p.FS.Remove(name); err != nil {
		return err
	}
	if u := p.f.undoLog(); u != nil {
		u.synced(name)
	}
	return nil
}

// Unwrap implements pvfs.FS.
func (p *pebbleFS) Unwrap() pvfs.FS { return p.FS }

// pebbleFile is a Pebble file with the faults of its FaultFS. Pebble appends with Write
// (pos tracks where) and, for files opened read-write, writes with WriteAt.
type pebbleFile struct {
	pvfs.File
	fs   *FaultFS
	name string
	pos  int64
}

// undoAt records what a write of n bytes at off overwrites (lazy mode).
func (f *pebbleFile) undoAt(off int64, n int) error {
	u := f.fs.undoLog()
	if u == nil {
		return nil
	}
	if err := u.before(pebbleSized{f.File}, f.name, off, n); err != nil {
		return fmt.Errorf("vfs fault: recording the undo of a write to %s: %w", f.name, err)
	}
	return nil
}

func (f *pebbleFile) Write(p []byte) (int, error) {
	if f.fs.fullFor(f.name) {
		n, _ := f.File.Write(p[:len(p)/2]) // a torn prefix, as a real full disk leaves
		f.pos += int64(n)
		return n, f.fs.errFull("write", f.name)
	}
	if err := f.undoAt(f.pos, len(p)); err != nil {
		return 0, err
	}
	n, err := f.File.Write(p)
	f.pos += int64(n)
	if err == nil {
		f.fs.writes.Add(1)
	}
	return n, err
}

func (f *pebbleFile) WriteAt(p []byte, off int64) (int, error) {
	if f.fs.fullFor(f.name) {
		n, _ := f.File.WriteAt(p[:len(p)/2], off)
		return n, f.fs.errFull("write", f.name)
	}
	if err := f.undoAt(off, len(p)); err != nil {
		return 0, err
	}
	n, err := f.File.WriteAt(p, off)
	if err == nil {
		f.fs.writes.Add(1)
	}
	return n, err
}

func (f *pebbleFile) Preallocate(off, length int64) error {
	if f.fs.fullFor(f.name) {
		return f.fs.errFull("preallocate", f.name)
	}
	return f.File.Preallocate(off, length)
}

// syncFault is the error an injected fault gives a sync of this file, if any.
func (f *pebbleFile) syncFault() error {
	if f.fs.syncFailsFor(f.name) {
		return f.fs.errSync(f.name)
	}
	if f.fs.fullFor(f.name) {
		return f.fs.errFull("sync", f.name)
	}
	return nil
}

func (f *pebbleFile) synced() {
	if u := f.fs.undoLog(); u != nil {
		u.synced(f.name)
	}
}

func (f *pebbleFile) Sync() error {
	if err := f.syncFault(); err != nil {
		return err
	}
	if err := f.File.Sync(); err != nil {
		return err
	}
	f.synced()
	return nil
}

func (f *pebbleFile) SyncData() error {
	if err := f.syncFault(); err != nil {
		return err
	}
	if err := f.File.SyncData(); err != nil {
		return err
	}
	f.synced()
	return nil
}

func (f *pebbleFile) SyncTo(length int64) (bool, error) {
	if err := f.syncFault(); err != nil {
		return false, err
	}
	full, err := f.File.SyncTo(length)
	if err == nil && full {
		f.synced()
	}
	return full, err
}

// pebbleSized gives a Pebble file the Size the undo log asks for.
type pebbleSized struct{ pvfs.File }

func (s pebbleSized) Size() (int64, error) {
	st, err := s.Stat()
	if err != nil {
		return 0, err
	}
	return st.Size(), nil
}
