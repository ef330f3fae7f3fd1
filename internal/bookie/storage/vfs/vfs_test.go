package vfs

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

func TestOSFS(t *testing.T) {
	dir := t.TempDir()
	fsys := Default()
	f, err := fsys.Create(filepath.Join(dir, "b"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := fsys.Create(filepath.Join(dir, "b")); !errors.Is(err, fs.ErrExist) {
		t.Fatalf("Create of an existing file: %v, want ErrExist", err)
	}
	if err := f.Preallocate(0, 1<<20); err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt([]byte("hello"), 10); err != nil {
		t.Fatal(err)
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	if n, _ := f.Size(); n != 1<<20 {
		t.Fatalf("size after preallocation = %d", n)
	}
	buf := make([]byte, 5)
	if _, err := f.ReadAt(buf, 10); err != nil || string(buf) != "hello" {
		t.Fatalf("ReadAt = %q, %v", buf, err)
	}
	_ = f.Close()
	if err := fsys.WriteFileAtomic(filepath.Join(dir, "a"), []byte("x")); err != nil {
		t.Fatal(err)
	}
	if b, err := fsys.ReadFile(filepath.Join(dir, "a")); err != nil || string(b) != "x" {
		t.Fatalf("ReadFile = %q, %v", b, err)
	}
	names, err := fsys.List(dir)
	if err != nil || len(names) != 2 || names[0] != "a" || names[1] != "b" {
		t.Fatalf("List = %v, %v (want sorted a, b; no temporary file left)", names, err)
	}
	if u, err := fsys.Usage(dir); err != nil || u < 0 || u > 1 {
		t.Fatalf("Usage = %v, %v", u, err)
	}
}

func TestFaultFS(t *testing.T) {
	dir := t.TempDir()
	ffs := NewFaultFS(Default())
	f, err := ffs.Create(filepath.Join(dir, "f"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteAt([]byte("good"), 0); err != nil {
		t.Fatal(err)
	}
	ffs.SetFull(true)
	if _, err := f.WriteAt([]byte("more"), 4); !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("write on a full disk: %v, want ENOSPC", err)
	}
	if _, err := ffs.Create(filepath.Join(dir, "g")); !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("create on a full disk: %v, want ENOSPC", err)
	}
	if u, _ := ffs.Usage(dir); u != 1 {
		t.Fatalf("usage of a full disk = %v", u)
	}
	buf := make([]byte, 4)
	if _, err := f.ReadAt(buf, 0); err != nil || string(buf) != "good" {
		t.Fatalf("read on a full disk: %q, %v (reads must work)", buf, err)
	}
	ffs.SetFull(false)
	ffs.SetSyncFails(true)
	if err := f.Sync(); !errors.Is(err, syscall.EIO) {
		t.Fatalf("failing sync: %v, want EIO", err)
	}
	ffs.SetSyncFails(false)
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
}

// TestRevertUnsynced: with an undo directory, writes and preallocations after the last
// successful Sync are undone by RevertUnsynced, and those before it are kept, as a machine
// crash would leave the file.
func TestRevertUnsynced(t *testing.T) {
	dir, undo := t.TempDir(), t.TempDir()
	ffs := NewFaultFS(Default())
	if err := ffs.SetUndoDir(undo); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "f")
	f, err := ffs.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt([]byte("durable"), 0); err != nil {
		t.Fatal(err)
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	if err := f.Preallocate(0, 4096); err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt([]byte("DURA"), 0); err != nil { // overwrites synced bytes
		t.Fatal(err)
	}
	if _, err := f.WriteAt([]byte("lost tail"), 7); err != nil { // grows the file
		t.Fatal(err)
	}
	_ = f.Close() // the "crash": no Sync
	if err := RevertUnsynced(undo); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil || string(b) != "durable" {
		t.Fatalf("after the revert: %q, %v; want only the synced %q", b, err, "durable")
	}
	if logs, _ := filepath.Glob(filepath.Join(undo, "*")); len(logs) != 0 {
		t.Fatalf("undo logs left: %v", logs)
	}
}
