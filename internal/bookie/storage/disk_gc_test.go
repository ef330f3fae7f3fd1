package storage_test

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/magnetar-io/magnetar/internal/bookie/storage"
	"github.com/magnetar-io/magnetar/internal/bookie/storage/entrylog"
	st "github.com/magnetar-io/magnetar/internal/bookie/storage/storagetest"
	"github.com/magnetar-io/magnetar/internal/bookie/storage/vfs"
)

func TestGCAndCompactionKeepLiveEntries(t *testing.T) {
	cfg := testConfig(t.TempDir())
	cfg.EntryLogSizeLimit = 1 << 20
	cfg.FlushInterval = time.Hour
	cfg.ReadAheadCacheMaxSizeMB = 0 // every read goes to the entry logs
	s := openTest(t, cfg, nil)
	const perLedger = 120
	size := func(l, e int64) int { return 1000 + int((l*31+e*17)%3000) }
	// Round 1: ledgers 1..4 interleaved, flushed together into a few logs.
	// Round 2: ledgers 5..6 alone, three times as many entries, so at least one log
	// holds nothing else.
	n := map[int64]int64{1: perLedger, 2: perLedger, 3: perLedger, 4: perLedger, 5: 3 * perLedger, 6: 3 * perLedger}
	for round, ledgers := range [][]int64{{1, 2, 3, 4}, {5, 6}} {
		for e := int64(0); e < n[ledgers[0]]; e++ {
			for _, l := range ledgers {
				add(t, s, l, e, st.Payload(l, e, size(l, e)))
			}
		}
		if err := s.FlushNow(); err != nil {
			t.Fatalf("flush round %d: %v", round, err)
		}
	}
	logsBefore := len(s.EntryLogIDs())
	// Ledgers 5 and 6 fill logs of their own: deleting them frees whole logs.
	for _, l := range []int64{5, 6, 2, 3} {
		if err := s.DeleteLedger(l); err != nil {
			t.Fatal(err)
		}
	}
	removed, compacted, err := s.CollectGarbageNow(0)
	if err != nil || removed == 0 || compacted != 0 {
		t.Fatalf("GC(0): removed %d compacted %d err %v; want some removed, none compacted", removed, compacted, err)
	}
	// Ledgers 1 and 4 are half of each round-1 log: compaction at 0.9 rewrites them.
	removed2, compacted, err := s.CollectGarbageNow(0.9)
	if err != nil || compacted == 0 {
		t.Fatalf("GC(0.9): compacted %d err %v; want some compacted", compacted, err)
	}
	t.Logf("entry logs: %d before, removed %d, compacted %d, %d now", logsBefore, removed+removed2, compacted, len(s.EntryLogIDs()))
	check := func(s *storage.Disk) {
		t.Helper()
		for _, l := range []int64{1, 4} {
			for e := int64(0); e < perLedger; e++ {
				read(t, s, l, e, st.Payload(l, e, size(l, e)))
			}
		}
		for _, l := range []int64{2, 3, 5, 6} {
			if _, err := s.ReadEntry(l, 0); !errors.Is(err, storage.ErrNoSuchLedger) {
				t.Fatalf("deleted ledger %d: %v", l, err)
			}
		}
	}
	check(s)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openTest(t, cfg, nil)
	defer s.Close()
	check(s)
}

func TestDiskFullReadOnly(t *testing.T) {
	ffs := vfs.NewFaultFS(vfs.Default())
	cfg := testConfig(t.TempDir())
	s := openTest(t, cfg, ffs)
	for e := int64(0); e < 50; e++ {
		add(t, s, 1, e, st.Payload(1, e, 300))
	}
	ffs.SetFull(true)
	// The first add after the disk filled fails in the journal write (or is rejected
	// because the checker already saw the disk full); either way it is never acknowledged.
	if err := st.Add(t, s, 1, 50, key, 49, []byte("x"), false); !errors.Is(err, storage.ErrReadOnly) {
		t.Fatalf("add on a full disk: %v, want ErrReadOnly", err)
	}
	waitFor(t, "read-only", s.ReadOnly)
	if err := st.Add(t, s, 1, 51, key, 49, []byte("x"), false); !errors.Is(err, storage.ErrReadOnly) {
		t.Fatalf("add while read-only: %v, want ErrReadOnly", err)
	}
	for e := int64(0); e < 50; e++ { // reads are served
		read(t, s, 1, e, st.Payload(1, e, 300))
	}
	// Fencing goes through the journal even while read-only; on the full disk it fails
	// cleanly (and so the write error is certain, whichever check tripped first).
	if _, err := s.Fence(77, key); !errors.Is(err, storage.ErrReadOnly) {
		t.Fatalf("fence on a full disk: %v, want ErrReadOnly", err)
	}
	// After a write error the index is left alone (Pebble treats a failed commit as fatal):
	// a delete is refused until the disk recovers, then succeeds.
	if err := s.DeleteLedger(99); !errors.Is(err, storage.ErrReadOnly) {
		t.Fatalf("delete on a failing disk: %v, want ErrReadOnly", err)
	}
	time.Sleep(3 * cfg.FlushInterval) // flushes fail meanwhile; nothing may be lost
	ffs.SetFull(false)
	waitFor(t, "writable", func() bool { return !s.ReadOnly() })
	if err := s.DeleteLedger(99); err != nil {
		t.Fatalf("delete after the disk recovered: %v", err)
	}
	for e := int64(50); e < 100; e++ {
		add(t, s, 1, e, st.Payload(1, e, 300))
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openTest(t, cfg, nil)
	defer s.Close()
	for e := int64(0); e < 100; e++ {
		read(t, s, 1, e, st.Payload(1, e, 300))
	}
}

func TestFlushFailureKeepsEntries(t *testing.T) {
	ffs := vfs.NewFaultFS(vfs.Default())
	cfg := testConfig(t.TempDir())
	cfg.FlushInterval = time.Hour
	s := openTest(t, cfg, ffs)
	for e := int64(0); e < 50; e++ {
		add(t, s, 1, e, st.Payload(1, e, 300))
	}
	ffs.SetSyncFails(true)
	if err := s.FlushNow(); err == nil {
		t.Fatal("flush with failing fsync succeeded")
	}
	for e := int64(0); e < 50; e++ { // still served from the write cache
		read(t, s, 1, e, st.Payload(1, e, 300))
	}
	ffs.SetSyncFails(false)
	if err := s.FlushNow(); err != nil {
		t.Fatalf("flush retry: %v", err)
	}
	s.CloseWithoutFlush()
	s = openTest(t, cfg, nil)
	defer s.Close()
	for e := int64(0); e < 50; e++ {
		read(t, s, 1, e, st.Payload(1, e, 300))
	}
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("not %s after 30s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// A damaged record in the middle of a log must not let compaction drop the live entries
// behind it.
func TestCompactionKeepsLogWithDamagedRecord(t *testing.T) {
	cfg := testConfig(t.TempDir())
	cfg.FlushInterval = time.Hour
	cfg.ReadAheadCacheMaxSizeMB = 0
	s := openTest(t, cfg, nil)
	for e := int64(0); e < 50; e++ {
		add(t, s, 1, e, st.Payload(1, e, 1000))
		add(t, s, 2, e, st.Payload(2, e, 1000))
	}
	if err := s.FlushNow(); err != nil {
		t.Fatal(err)
	}
	ids := s.EntryLogIDs()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	// Damage a record of ledger 1 early in the first log (the entries are sorted by ledger).
	slices.Sort(ids)
	path := filepath.Join(cfg.LedgerDir(), entrylog.FileName(ids[0]))
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	b[entrylog.HeaderSize+3*(entrylog.RecordHeaderSize+1000)+2] ^= 0xff // record 3's length
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	s = openTest(t, cfg, nil)
	defer s.Close()
	if err := s.DeleteLedger(2); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.CollectGarbageNow(0.99); err == nil {
		t.Fatal("compaction of a log with a damaged record reported success")
	}
	// Everything but the damaged entry still reads; the damaged one is corrupt, not absent.
	for e := int64(0); e < 50; e++ {
		if e == 3 {
			if _, err := s.ReadEntry(1, 3); !errors.Is(err, storage.ErrCorrupt) {
				t.Fatalf("damaged entry: %v, want ErrCorrupt", err)
			}
			continue
		}
		read(t, s, 1, e, st.Payload(1, e, 1000))
	}
}
