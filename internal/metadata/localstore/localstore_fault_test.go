package localstore

import (
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/cockroachdb/pebble/v2/vfs/errorfs"

	"github.com/magnetar-io/magnetar/internal/metadata"
)

// failingSyncs is a Pebble file system whose syncs of the files match accepts fail with
// EIO while the returned toggle is on.
func failingSyncs(match func(base string) bool) (vfs.FS, *errorfs.Toggle) {
	toggle := &errorfs.Toggle{Injector: errorfs.InjectorFunc(func(op errorfs.Op) error {
		switch op.Kind {
		case errorfs.OpFileSync, errorfs.OpFileSyncData, errorfs.OpFileSyncTo:
			if match(filepath.Base(op.Path)) {
				return fmt.Errorf("injected: sync %s: %w", op.Path, syscall.EIO)
			}
		}
		return nil
	})}
	return errorfs.Wrap(vfs.Default, toggle), toggle
}

// putAcked writes n keys, which must all be acknowledged.
func putAcked(t *testing.T, s *Store, prefix string, n int) {
	t.Helper()
	for i := range n {
		if _, err := s.Put(ctxFor(t), fmt.Sprintf("/%s/%d", prefix, i), []byte("v"), metadata.AnyVersion); err != nil {
			t.Fatalf("put %s/%d: %v", prefix, i, err)
		}
	}
}

// reopenAndCheck opens dir on the operating system's file system and checks that every
// acknowledged key of putAcked is there.
func reopenAndCheck(t *testing.T, dir, prefix string, n int) {
	t.Helper()
	s := open(t, dir, Options{})
	defer s.Close()
	for i := range n {
		if _, err := s.Get(ctxFor(t), fmt.Sprintf("/%s/%d", prefix, i)); err != nil {
			t.Fatalf("acknowledged key %s/%d after the restart: %v", prefix, i, err)
		}
	}
}

// TestFailedCommitIsAnErrorNotAPanic: a failing fsync of Pebble's WAL fails the commit;
// Pebble's Fatalf on it used to end the process. The writer gets an error wrapping
// ErrFailed, every later write is refused, Close returns, and a restart reads back every
// acknowledged write.
func TestFailedCommitIsAnErrorNotAPanic(t *testing.T) {
	fs, toggle := failingSyncs(func(base string) bool { return strings.HasSuffix(base, ".log") })
	dir := t.TempDir()
	s, err := Open(dir, Options{FS: fs}, nil)
	if err != nil {
		t.Fatal(err)
	}
	putAcked(t, s, "a", 20)
	toggle.On()
	if _, err := s.Put(ctxFor(t), "/b", []byte("v"), metadata.AnyVersion); !errors.Is(err, ErrFailed) {
		t.Fatalf("put with the WAL's fsync failing: %v, want ErrFailed", err)
	}
	toggle.Off()
	if _, err := s.Put(ctxFor(t), "/c", []byte("v"), metadata.AnyVersion); !errors.Is(err, ErrFailed) {
		t.Fatalf("put after a failed commit: %v, want ErrFailed (Pebble's commit pipeline is gone)", err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("close after a failed commit: %v", err)
	}
	reopenAndCheck(t, dir, "a", 20)
}

// TestBackgroundFailureRefusesWrites: a failing fsync of the MANIFEST fails Pebble's flush
// at the step it cannot undo (Fatalf on its own goroutine, which used to end the process).
// Later writes are refused with ErrFailed, Close returns, and a restart (on a copy: the
// stuck flush keeps the database's lock in this process) reads back every acknowledged
// write.
func TestBackgroundFailureRefusesWrites(t *testing.T) {
	fs, toggle := failingSyncs(func(base string) bool { return strings.HasPrefix(base, "MANIFEST") })
	dir := t.TempDir()
	s, err := Open(dir, Options{FS: fs}, nil)
	if err != nil {
		t.Fatal(err)
	}
	putAcked(t, s, "a", 20)
	toggle.On()
	if _, err := s.j.db.AsyncFlush(); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(time.Minute); s.j.parked.Load() == nil; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("Pebble's flush did not fail with the MANIFEST's fsync failing")
		}
	}
	if _, err := s.Put(ctxFor(t), "/b", []byte("v"), metadata.AnyVersion); !errors.Is(err, ErrFailed) {
		t.Fatalf("put after Pebble's background failure: %v, want ErrFailed", err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("close after a background failure: %v", err)
	}
	restarted := t.TempDir()
	if out, err := exec.Command("cp", "-a", dir+"/.", restarted).CombinedOutput(); err != nil {
		t.Fatalf("copy the database: %v: %s", err, out)
	}
	reopenAndCheck(t, restarted, "a", 20)
}
