package storage_test

import (
	"errors"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/magnetar-io/magnetar/internal/bookie/storage"
	"github.com/magnetar-io/magnetar/internal/bookie/storage/index"
	st "github.com/magnetar-io/magnetar/internal/bookie/storage/storagetest"
	"github.com/magnetar-io/magnetar/internal/bookie/storage/vfs"
	"github.com/magnetar-io/magnetar/internal/config"
)

// onlyIndex scopes a FaultFS's faults to the Pebble index's files.
var onlyIndex = vfs.InIndexDir

// TestIndexFaultFailsTheFlushNotTheProcess: the Pebble index is on the fault layer
// (vfs.PebbleFS). A failing fsync, or a full disk, on the index's files alone fails the
// flush's index commit with an error (index.ErrFailed), where Pebble would have killed the
// process with its fatal commit error; reads are still served; once the disk is healthy
// the index is reopened and the same flush succeeds, and every entry survives a restart.
func TestIndexFaultFailsTheFlushNotTheProcess(t *testing.T) {
	for _, fault := range []string{"syncfail", "full"} {
		t.Run(fault, func(t *testing.T) {
			ffs := vfs.NewFaultFS(vfs.Default())
			ffs.SetOnly(onlyIndex)
			set := map[string]func(bool){"syncfail": ffs.SetSyncFails, "full": ffs.SetFull}[fault]
			cfg := testConfig(t.TempDir())
			cfg.FlushInterval = time.Hour // flushes by hand
			s := openTest(t, cfg, ffs)
			for e := int64(0); e < 50; e++ {
				add(t, s, 1, e, st.Payload(1, e, 300))
			}
			if err := s.FlushNow(); err != nil {
				t.Fatal(err)
			}
			for e := int64(50); e < 100; e++ {
				add(t, s, 1, e, st.Payload(1, e, 300))
			}
			set(true)
			if err := s.FlushNow(); !errors.Is(err, index.ErrFailed) {
				t.Fatalf("flush with the index's disk failing: %v, want index.ErrFailed", err)
			}
			for e := int64(0); e < 100; e++ { // from the entry logs through the index, and from the write cache
				read(t, s, 1, e, st.Payload(1, e, 300))
			}
			set(false)
			if err := s.FlushNow(); err != nil {
				t.Fatalf("flush after the disk recovered: %v", err)
			}
			restartAndRead(t, s, cfg, 100)
		})
	}
}

// TestIndexFaultTurnsReadOnly: with the flusher running, a failing fsync on the index's
// files alone turns the bookie read-only, as a failing journal or entry-log write does:
// adds are refused with ErrReadOnly and reads are served. The disk check's probe covers the
// index's directory, so the bookie stays read-only while the fault lasts and turns
// writable once it is gone; nothing acknowledged is lost.
func TestIndexFaultTurnsReadOnly(t *testing.T) {
	ffs := vfs.NewFaultFS(vfs.Default())
	ffs.SetOnly(onlyIndex)
	cfg := testConfig(t.TempDir())
	s := openTest(t, cfg, ffs)
	for e := int64(0); e < 50; e++ {
		add(t, s, 1, e, st.Payload(1, e, 300))
	}
	// Acknowledged (the journal is healthy) while the flusher waits; then the index's disk
	// fails and the flush of these fails in the index commit.
	release := s.StallFlusher()
	for e := int64(50); e < 60; e++ {
		add(t, s, 1, e, st.Payload(1, e, 300))
	}
	ffs.SetSyncFails(true)
	release()
	waitFor(t, "read-only", s.ReadOnly)
	if err := st.Add(t, s, 1, 60, key, 59, []byte("x"), false); !errors.Is(err, storage.ErrReadOnly) {
		t.Fatalf("add while the index fails: %v, want ErrReadOnly", err)
	}
	s.CheckHealthNow() // the probe of the index's directory fails: still read-only
	if !s.ReadOnly() {
		t.Fatal("the disk check made the bookie writable while the index's disk still fails")
	}
	for e := int64(0); e < 60; e++ {
		read(t, s, 1, e, st.Payload(1, e, 300))
	}
	ffs.SetSyncFails(false)
	waitFor(t, "writable", func() bool { return !s.ReadOnly() })
	for e := int64(60); e < 100; e++ {
		add(t, s, 1, e, st.Payload(1, e, 300))
	}
	restartAndRead(t, s, cfg, 100)
}

// restartAndRead closes s, opens its directories again on a healthy disk and reads entries
// 0..n-1 of ledger 1 back.
func restartAndRead(t *testing.T, s *storage.Disk, cfg config.BookieStorageConfig, n int64) {
	t.Helper()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openTest(t, cfg, nil)
	defer s.Close()
	for e := int64(0); e < n; e++ {
		read(t, s, 1, e, st.Payload(1, e, 300))
	}
}

// TestIndexUnsyncedWritesAreRecorded: in lazy mode (a machine crash loses unsynced writes)
// the index's writes go through the undo log like the journal's and the entry logs', and
// reverting them after a crash leaves an index Pebble opens, with every acknowledged entry
// readable (the journal replays what the index had not made durable).
func TestIndexUnsyncedWritesAreRecorded(t *testing.T) {
	ffs := vfs.NewFaultFS(vfs.Default())
	undo := filepath.Join(t.TempDir(), "undo")
	if err := ffs.SetUndoDir(undo); err != nil {
		t.Fatal(err)
	}
	cfg := testConfig(t.TempDir())
	cfg.FlushInterval = time.Hour
	s := openTest(t, cfg, ffs)
	for e := int64(0); e < 50; e++ {
		add(t, s, 1, e, st.Payload(1, e, 300))
	}
	if err := s.FlushNow(); err != nil {
		t.Fatal(err)
	}
	for e := int64(50); e < 100; e++ {
		add(t, s, 1, e, st.Payload(1, e, 300))
	}
	s.CloseWithoutFlush()
	logs, err := filepath.Glob(filepath.Join(undo, "*.undo"))
	if err != nil {
		t.Fatal(err)
	}
	indexLogs := 0
	for _, l := range logs {
		if strings.Contains(l, "index") {
			indexLogs++
		}
	}
	if indexLogs == 0 {
		t.Fatalf("no undo log for any index file among %d: the index's writes bypass the fault layer", len(logs))
	}
	if err := vfs.RevertUnsynced(undo); err != nil {
		t.Fatal(err)
	}
	s = openTest(t, cfg, nil)
	defer s.Close()
	for e := int64(0); e < 100; e++ {
		read(t, s, 1, e, st.Payload(1, e, 300))
	}
}

// TestIndexBackgroundFaultKeepsReadOnlyUntilRestart: a failing fsync on the index's
// MANIFEST alone fails Pebble's own flush job at the one step Pebble cannot undo (it calls
// Fatalf on its goroutine, which used to end the process). The bookie turns read-only:
// adds are refused with ErrReadOnly, the disk check does not make it writable again even
// once the fault is gone (the index's state in memory is past what its files record), and
// reads of every acknowledged entry are served. After a restart (on a copy of the
// directories: the stuck Pebble job keeps its lock in this process) every acknowledged
// entry is there.
func TestIndexBackgroundFaultKeepsReadOnlyUntilRestart(t *testing.T) {
	ffs := vfs.NewFaultFS(vfs.Default())
	cfg := testConfig(t.TempDir())
	s := openTest(t, cfg, ffs)
	for e := int64(0); e < 50; e++ {
		add(t, s, 1, e, st.Payload(1, e, 300))
	}
	if err := s.FlushNow(); err != nil {
		t.Fatal(err)
	}
	// Acknowledged through the journal while the flusher waits: only the journal and the
	// write cache hold these when the index fails.
	release := s.StallFlusher()
	for e := int64(50); e < 60; e++ {
		add(t, s, 1, e, st.Payload(1, e, 300))
	}
	ffs.SetOnly(func(name string) bool {
		return onlyIndex(name) && strings.HasPrefix(filepath.Base(name), "MANIFEST")
	})
	ffs.SetSyncFails(true)
	if err := s.FlushIndexAsync(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "read-only", s.ReadOnly)
	release()
	if err := st.Add(t, s, 1, 60, key, 59, []byte("x"), false); !errors.Is(err, storage.ErrReadOnly) {
		t.Fatalf("add after the index's background failure: %v, want ErrReadOnly", err)
	}
	ffs.SetSyncFails(false)
	s.CheckHealthNow()
	if !s.ReadOnly() {
		t.Fatal("the disk check made the bookie writable after a fatal index failure")
	}
	if err := s.FlushNow(); !errors.Is(err, storage.ErrReadOnly) {
		t.Fatalf("flush after the index's background failure: %v, want ErrReadOnly", err)
	}
	for e := int64(0); e < 60; e++ {
		read(t, s, 1, e, st.Payload(1, e, 300))
	}
	if err := s.Close(); !errors.Is(err, storage.ErrReadOnly) { // its final flush cannot reach the index
		t.Fatalf("close: %v, want the final flush's ErrReadOnly", err)
	}
	dir := t.TempDir()
	if out, err := exec.Command("cp", "-a", filepath.Dir(cfg.JournalDirectories[0])+"/.", dir).CombinedOutput(); err != nil {
		t.Fatalf("copy the directories: %v: %s", err, out)
	}
	restarted := testConfig(dir)
	s = openTest(t, restarted, nil)
	defer s.Close()
	for e := int64(0); e < 60; e++ {
		read(t, s, 1, e, st.Payload(1, e, 300))
	}
	add(t, s, 1, 60, st.Payload(1, 60, 300))
}

// TestIndexBackgroundErrorTurnsReadOnly: a full disk for the index's sstables alone fails
// Pebble's flush job, which Pebble retries (the data stay in its memtable and WAL). The
// bookie turns read-only on Pebble's report and writable again once the disk is back;
// nothing acknowledged is lost.
func TestIndexBackgroundErrorTurnsReadOnly(t *testing.T) {
	ffs := vfs.NewFaultFS(vfs.Default())
	cfg := testConfig(t.TempDir())
	s := openTest(t, cfg, ffs)
	for e := int64(0); e < 50; e++ {
		add(t, s, 1, e, st.Payload(1, e, 300))
	}
	if err := s.FlushNow(); err != nil {
		t.Fatal(err)
	}
	ffs.SetOnly(func(name string) bool { return onlyIndex(name) && strings.HasSuffix(name, ".sst") })
	ffs.SetFull(true)
	if err := s.FlushIndexAsync(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "read-only", s.ReadOnly)
	ffs.SetFull(false)
	waitFor(t, "writable", func() bool { return !s.ReadOnly() })
	for e := int64(50); e < 100; e++ {
		add(t, s, 1, e, st.Payload(1, e, 300))
	}
	restartAndRead(t, s, cfg, 100)
}
