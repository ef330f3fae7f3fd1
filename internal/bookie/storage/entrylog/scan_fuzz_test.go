package entrylog

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/magnetar-io/magnetar/internal/bookie/storage/vfs"
)

// FuzzScan scans an entry log holding the fuzzer's bytes after a valid header (compaction's
// path over a damaged log). Scan must not panic nor allocate past a record's bound; every
// record it yields lies inside the file, in order, re-encodes to the file's bytes, and
// reads back at its offset with Read.
func FuzzScan(f *testing.F) {
	var seed []byte
	for i := range 4 {
		seed = AppendRecord(seed, 7, int64(i), bytes.Repeat([]byte{byte(i)}, 300))
	}
	f.Add(seed)
	damaged := bytes.Clone(seed)
	damaged[len(damaged)/2] ^= 0x10
	f.Add(damaged)
	f.Add([]byte{0xff, 0xff, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 1<<20 {
			return
		}
		dir := t.TempDir()
		file := append(header(1), data...)
		if err := os.WriteFile(filepath.Join(dir, FileName(1)), file, 0o644); err != nil {
			t.Fatal(err)
		}
		l, err := OpenExisting(vfs.Default(), dir, 1)
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		last := int64(-1)
		err = l.Scan(func(rec Record, off int64, size int) error {
			if off <= last || off+int64(size) > int64(len(file)) {
				t.Fatalf("record at %d (%d bytes) out of order or past the file (%d bytes)", off, size, len(file))
			}
			last = off
			if enc := AppendRecord(nil, rec.LedgerID, rec.EntryID, rec.Payload); !bytes.Equal(enc, file[off:off+int64(size)]) {
				t.Fatalf("record at %d does not re-encode to the file's bytes", off)
			}
			got, err := l.Read(rec.LedgerID, rec.EntryID, off, size)
			if err != nil || !bytes.Equal(got, rec.Payload) {
				t.Fatalf("read of the scanned record at %d: %v", off, err)
			}
			return nil
		})
		if err != nil {
			t.Fatalf("scan: %v", err)
		}
	})
}
