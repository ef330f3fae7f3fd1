package localstore

import (
	"encoding/binary"
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
	for deadline := time.Now().Add(time.Minute); s.j.parked.Err() == nil; time.Sleep(5 * time.Millisecond) {
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

// TestCommitRacingAParkedJobReturns: a commit already on its way into Pebble when a
// background job parks (holding Pebble's mutex for good) and needing a memtable rotation
// used to wait for ever, under the store's lock, so every client of the metadata store
// stalled and Close never returned. The writer gets ErrFailed, so does every later
// request, and Close returns.
func TestCommitRacingAParkedJobReturns(t *testing.T) {
	fs, toggle := failingSyncs(func(base string) bool { return strings.HasPrefix(base, "MANIFEST") })
	s, err := Open(t.TempDir(), Options{FS: fs}, nil)
	if err != nil {
		t.Fatal(err)
	}
	putAcked(t, s, "a", 20)
	s.j.testBeforeApply = func() {
		s.j.testBeforeApply = nil
		// Above half of the 4 MiB memtable: the apply must rotate it, under Pebble's mutex.
		v := make([]byte, headerLen+3<<20)
		binary.BigEndian.PutUint64(v, 1)
		_ = s.j.batch.Set(append([]byte{prefixKey}, "/pad"...), v, nil)
		toggle.On()
		if _, err := s.j.db.AsyncFlush(); err != nil {
			t.Errorf("flush: %v", err)
		}
		for deadline := time.Now().Add(time.Minute); s.j.parked.Err() == nil; time.Sleep(5 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Error("Pebble's flush did not fail with the MANIFEST's fsync failing")
				return
			}
		}
	}
	done := make(chan error, 1)
	go func() {
		_, err := s.Put(ctxFor(t), "/b", []byte("v"), metadata.AnyVersion)
		done <- err
	}()
	select {
	case err := <-done:
		if !errors.Is(err, ErrFailed) {
			t.Fatalf("put racing the park: %v, want ErrFailed", err)
		}
	case <-time.After(2 * time.Minute): // a hang detector, not a speed assertion
		t.Fatal("a commit racing a parked background job never returned")
	}
	if _, err := s.Put(ctxFor(t), "/c", []byte("v"), metadata.AnyVersion); !errors.Is(err, ErrFailed) {
		t.Fatalf("put after the park: %v, want ErrFailed", err)
	}
	// memstore fails the whole store after a failed journal commit (until a restart), so
	// a read answers with that error, at once.
	if _, err := s.Get(ctxFor(t), "/a/7"); !errors.Is(err, ErrFailed) {
		t.Fatalf("read after the park: %v, want ErrFailed", err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("close after the park: %v", err)
	}
}
