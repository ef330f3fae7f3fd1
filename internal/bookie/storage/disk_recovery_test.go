package storage_test

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/magnetar-io/magnetar/internal/bookie/storage"
	"github.com/magnetar-io/magnetar/internal/bookie/storage/journal"
	st "github.com/magnetar-io/magnetar/internal/bookie/storage/storagetest"
	"github.com/magnetar-io/magnetar/internal/bookie/storage/vfs"
	"github.com/magnetar-io/magnetar/internal/config"
)

var key = []byte("mk")

func add(t testing.TB, s storage.Storage, l, e int64, p []byte) {
	t.Helper()
	if err := st.Add(t, s, l, e, key, e-1, p, false); err != nil {
		t.Fatalf("add (%d,%d): %v", l, e, err)
	}
}

func read(t testing.TB, s storage.Storage, l, e int64, want []byte) {
	t.Helper()
	got, err := s.ReadEntry(l, e)
	if err != nil {
		t.Fatalf("read (%d,%d): %v", l, e, err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("read (%d,%d): payload differs", l, e)
	}
}

// noFlush makes the write cache hold everything until close, so reopening after
// CloseWithoutFlush exercises journal replay.
func noFlush(c config.BookieStorageConfig) config.BookieStorageConfig {
	c.FlushInterval = time.Hour
	c.WriteCacheMaxSizeMB = 64
	return c
}

func TestReopenKeepsEntriesAndFencing(t *testing.T) {
	cfg := testConfig(t.TempDir())
	s := openTest(t, cfg, nil)
	for e := int64(0); e < 200; e++ {
		add(t, s, 1, e, st.Payload(1, e, 500))
		add(t, s, 2, e, st.Payload(2, e, 50))
	}
	if _, err := s.Fence(1, key); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Fence(3, key); err != nil { // never seen before
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openTest(t, cfg, nil)
	defer s.Close()
	for e := int64(0); e < 200; e++ {
		read(t, s, 1, e, st.Payload(1, e, 500))
		read(t, s, 2, e, st.Payload(2, e, 50))
	}
	for _, l := range []int64{1, 3} {
		if err := st.Add(t, s, l, 500, key, 0, []byte("x"), false); !errors.Is(err, storage.ErrFenced) {
			t.Fatalf("add to ledger %d fenced before restart: %v, want ErrFenced", l, err)
		}
	}
	if lac, _ := s.LAC(1); lac != 198 {
		t.Fatalf("LAC after reopen = %d, want 198", lac)
	}
	add(t, s, 2, 200, st.Payload(2, 200, 50))
}

func TestReplayAfterCrash(t *testing.T) {
	cfg := noFlush(testConfig(t.TempDir()))
	s := openTest(t, cfg, nil)
	for e := int64(0); e < 300; e++ {
		add(t, s, 7, e, st.Payload(7, e, 1000))
	}
	if _, err := s.Fence(7, key); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteLedger(8); err != nil {
		t.Fatal(err)
	}
	s.CloseWithoutFlush()
	s = openTest(t, cfg, nil)
	for e := int64(0); e < 300; e++ {
		read(t, s, 7, e, st.Payload(7, e, 1000))
	}
	if err := st.Add(t, s, 7, 300, key, 0, []byte("x"), false); !errors.Is(err, storage.ErrFenced) {
		t.Fatalf("fence lost in replay: %v", err)
	}
	// Recovery adds still work on the fenced ledger, and survive another crash.
	if err := st.Add(t, s, 7, 300, key, 299, []byte("recovered"), true); err != nil {
		t.Fatal(err)
	}
	s.CloseWithoutFlush()
	s = openTest(t, cfg, nil)
	defer s.Close()
	read(t, s, 7, 300, []byte("recovered"))
	if lac, _ := s.LAC(7); lac != 299 {
		t.Fatalf("LAC = %d, want 299", lac)
	}
}

// journalFiles lists the journal files of cfg, oldest first.
func journalFiles(t *testing.T, cfg config.BookieStorageConfig) []string {
	names, err := vfs.Default().List(cfg.JournalDir())
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, n := range names {
		if _, ok := journal.ParseFileName(n); ok {
			out = append(out, filepath.Join(cfg.JournalDir(), n))
		}
	}
	return out
}

// TestTornJournalTailAtOpen: the last journal record is damaged before a restart. A torn
// write (a crash cut the group short: from some sector on the record is zeros, as the file
// was preallocated) was never acknowledged and reads as absent; a record that is whole but
// fails its checksum (a flipped bit, or a nonsense length over sectors that hold data) may
// have been acknowledged, so its entry reads as corrupt, never as absent (invariant 4).
func TestTornJournalTailAtOpen(t *testing.T) {
	for _, tc := range []struct {
		mode string
		want error
	}{{"torn", storage.ErrNoSuchEntry}, {"bitflip", storage.ErrCorrupt}, {"garbage-length", storage.ErrCorrupt}} {
		t.Run(tc.mode, func(t *testing.T) {
			const size = 2000 // several sectors per record
			cfg := noFlush(testConfig(t.TempDir()))
			s := openTest(t, cfg, nil)
			for e := int64(0); e < 100; e++ {
				add(t, s, 1, e, st.Payload(1, e, size))
			}
			s.CloseWithoutFlush()
			files := journalFiles(t, cfg)
			path := files[len(files)-1]
			b, _ := os.ReadFile(path)
			end := len(bytes.TrimRight(b, "\x00"))
			recLen := journal.RecordHeaderSize + 1 + 8*3 + 2 + len(key) + size
			start := end - recLen
			switch tc.mode {
			case "torn": // the record's sectors from the second one on never reached the disk
				clear(b[(start/journal.Sector+1)*journal.Sector : end])
			case "bitflip": // the last record's payload damaged
				b[end-10] ^= 1
			case "garbage-length": // the last record's length field is nonsense
				copy(b[start:], []byte{0x7f, 0xff, 0xff, 0xff})
			}
			if err := os.WriteFile(path, b, 0o644); err != nil {
				t.Fatal(err)
			}
			s = openTest(t, cfg, nil)
			defer s.Close()
			for e := int64(0); e < 99; e++ {
				read(t, s, 1, e, st.Payload(1, e, size))
			}
			if _, err := s.ReadEntry(1, 99); !errors.Is(err, tc.want) {
				t.Fatalf("damaged last record: %v, want %v", err, tc.want)
			}
			add(t, s, 1, 99, st.Payload(1, 99, size)) // the bookie works on
			read(t, s, 1, 99, st.Payload(1, 99, size))
		})
	}
}

func TestCorruptEntryLogIsErrCorrupt(t *testing.T) {
	cfg := testConfig(t.TempDir())
	cfg.ReadAheadCacheMaxSizeMB = 0
	s := openTest(t, cfg, nil)
	for e := int64(0); e < 10; e++ {
		add(t, s, 1, e, bytes.Repeat([]byte{0xab}, 1000))
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	// Flip a payload byte in every entry log.
	names, _ := vfs.Default().List(cfg.LedgerDir())
	for _, n := range names {
		if strings.HasSuffix(n, ".log") {
			p := filepath.Join(cfg.LedgerDir(), n)
			b, _ := os.ReadFile(p)
			if i := bytes.IndexByte(b, 0xab); i >= 0 {
				b[i+500] ^= 0xff
				_ = os.WriteFile(p, b, 0o644)
			}
		}
	}
	s = openTest(t, cfg, nil)
	defer s.Close()
	if _, err := s.ReadEntry(1, 0); !errors.Is(err, storage.ErrCorrupt) {
		t.Fatalf("read of a corrupt entry: %v, want ErrCorrupt", err)
	}
	read(t, s, 1, 1, bytes.Repeat([]byte{0xab}, 1000))
	// A missing entry log is corruption too, not absence.
	s.Close()
	for _, n := range names {
		if strings.HasSuffix(n, ".log") {
			_ = os.Remove(filepath.Join(cfg.LedgerDir(), n))
		}
	}
	s = openTest(t, cfg, nil)
	defer s.Close()
	if _, err := s.ReadEntry(1, 1); !errors.Is(err, storage.ErrCorrupt) {
		t.Fatalf("read from a missing entry log: %v, want ErrCorrupt", err)
	}
}

func TestCookie(t *testing.T) {
	a, b := testConfig(t.TempDir()), testConfig(t.TempDir())
	for _, c := range []config.BookieStorageConfig{a, b} {
		s := openTest(t, c, nil)
		add(t, s, 1, 0, []byte("x"))
		_ = s.Close()
	}
	mixed := a
	mixed.JournalDirectories = b.JournalDirectories
	if _, err := storage.Open(mixed, nil, nil); !errors.Is(err, storage.ErrCookie) {
		t.Fatalf("open with another instance's journal: %v, want ErrCookie", err)
	}
	if err := os.RemoveAll(a.JournalDir()); err != nil {
		t.Fatal(err)
	}
	_ = os.MkdirAll(a.JournalDir(), 0o755)
	_, err := storage.Open(a, nil, nil)
	if !errors.Is(err, storage.ErrCookie) || !strings.Contains(err.Error(), "wiped") {
		t.Fatalf("open with a wiped journal: %v, want ErrCookie saying wiped", err)
	}
	s := openTest(t, b, nil) // the intact instance still opens
	read(t, s, 1, 0, []byte("x"))
	_ = s.Close()
}

func TestJournalFilesTrimmedAfterCheckpoint(t *testing.T) {
	cfg := testConfig(t.TempDir())
	cfg.JournalMaxSizeMB = 1
	cfg.FlushInterval = time.Hour
	cfg.WriteCacheMaxSizeMB = 64 // no flush at half cache before the one the test makes
	s := openTest(t, cfg, nil)
	defer s.Close()
	var wg sync.WaitGroup
	for e := int64(0); e < 400; e++ { // ~6 MiB: several journal files
		wg.Add(1)
		s.AddEntry(1, e, key, e-1, st.Payload(1, e, 16<<10), false, func(err error) {
			if err != nil {
				t.Errorf("add %d: %v", e, err)
			}
			wg.Done()
		})
	}
	wg.Wait()
	if n := len(journalFiles(t, cfg)); n < 4 {
		t.Fatalf("%d journal files before the flush, want rotation to several", n)
	}
	if err := s.FlushNow(); err != nil {
		t.Fatal(err)
	}
	// The current file, and the next one the writer makes ahead of its rotation.
	if n := len(journalFiles(t, cfg)); n > 2 {
		t.Fatalf("%d journal files after the checkpoint, want only the current one and the next", n)
	}
	for e := int64(0); e < 400; e++ {
		read(t, s, 1, e, st.Payload(1, e, 16<<10))
	}
}

// TestMidJournalDamagePutsLedgerInLimbo: a corrupt record in the middle of the journal was
// acknowledged, so the entry it held must read as corrupt, never as absent, across
// restarts; entries that are present and ledgers the damage cannot touch read as usual.
func TestMidJournalDamagePutsLedgerInLimbo(t *testing.T) {
	for _, mode := range []string{"payload-bitflip", "garbled-length"} {
		t.Run(mode, func(t *testing.T) {
			cfg := noFlush(testConfig(t.TempDir()))
			s := openTest(t, cfg, nil)
			for e := int64(0); e < 50; e++ {
				add(t, s, 1, e, st.Payload(1, e, 200))
				add(t, s, 2, e, st.Payload(2, e, 200))
			}
			s.CloseWithoutFlush()
			files := journalFiles(t, cfg)
			path := files[len(files)-1]
			b, _ := os.ReadFile(path)
			recLen := journal.RecordHeaderSize + 1 + 8*3 + 2 + len(key) + 200
			off := journal.HeaderSize + 40*recLen // (1,20): records alternate ledgers 1 and 2
			switch mode {
			case "payload-bitflip":
				b[off+recLen-10] ^= 1
			case "garbled-length":
				b[off+3] ^= 0x05
			}
			if err := os.WriteFile(path, b, 0o644); err != nil {
				t.Fatal(err)
			}
			for restart := range 2 {
				s = openTest(t, cfg, nil)
				for e := int64(0); e < 50; e++ {
					if e != 20 {
						read(t, s, 1, e, st.Payload(1, e, 200))
					}
					read(t, s, 2, e, st.Payload(2, e, 200))
				}
				if _, err := s.ReadEntry(1, 20); !errors.Is(err, storage.ErrCorrupt) {
					t.Fatalf("restart %d: lost entry reads %v, want ErrCorrupt", restart, err)
				}
				_, err1 := s.ReadEntry(1, 50)
				_, err2 := s.ReadEntry(2, 50)
				if mode == "payload-bitflip" {
					// Attributed to (1,20): entries past it and the other ledger are unaffected.
					if !errors.Is(err1, storage.ErrNoSuchEntry) || !errors.Is(err2, storage.ErrNoSuchEntry) {
						t.Fatalf("restart %d: past the damage: %v, %v; want ErrNoSuchEntry", restart, err1, err2)
					}
				} else if !errors.Is(err1, storage.ErrCorrupt) || !errors.Is(err2, storage.ErrCorrupt) {
					// Unattributable: every ledger of the file is in limbo without bound.
					t.Fatalf("restart %d: unattributed damage: %v, %v; want ErrCorrupt", restart, err1, err2)
				}
				if err := s.Close(); err != nil {
					t.Fatal(err)
				}
			}
			// Deleting a ledger ends its limbo along with it.
			s = openTest(t, cfg, nil)
			defer s.Close()
			if err := s.DeleteLedger(1); err != nil {
				t.Fatal(err)
			}
			if _, err := s.ReadEntry(1, 20); errors.Is(err, storage.ErrCorrupt) {
				t.Fatalf("deleted ledger still in limbo: %v", err)
			}
		})
	}
}
