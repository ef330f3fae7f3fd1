package entrylog

import (
	"bytes"
	"errors"
	"testing"

	"github.com/magnetar-io/magnetar/internal/bookie/storage/vfs"
)

func TestAppendReadScan(t *testing.T) {
	dir := t.TempDir()
	lg, err := Create(vfs.Default(), dir, 3)
	if err != nil {
		t.Fatal(err)
	}
	type at struct {
		off  int64
		size int
	}
	var ats []at
	for e := int64(0); e < 500; e++ {
		off, n, err := lg.Append(1, e, bytes.Repeat([]byte{byte(e)}, int(e)*10))
		if err != nil {
			t.Fatal(err)
		}
		ats = append(ats, at{off, n})
	}
	if err := lg.Sync(); err != nil {
		t.Fatal(err)
	}
	for e, a := range ats {
		p, err := lg.Read(1, int64(e), a.off, a.size)
		if err != nil || !bytes.Equal(p, bytes.Repeat([]byte{byte(e)}, e*10)) {
			t.Fatalf("read %d: %v", e, err)
		}
	}
	if _, err := lg.Read(2, 0, ats[0].off, ats[0].size); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("read with wrong ids: %v, want ErrCorrupt", err)
	}
	_ = lg.Close()
	lg, err = OpenExisting(vfs.Default(), dir, 3)
	if err != nil {
		t.Fatal(err)
	}
	defer lg.Close()
	n := 0
	if err := lg.Scan(func(rec Record, off int64, size int) error {
		if rec.EntryID != int64(n) || off != ats[n].off || size != ats[n].size {
			t.Fatalf("scan record %d: %+v at %d", n, rec.EntryID, off)
		}
		n++
		return nil
	}); err != nil || n != 500 {
		t.Fatalf("scan: %d records, %v", n, err)
	}
}

func FuzzDecodeRecord(f *testing.F) {
	f.Add(AppendRecord(nil, 1, 2, []byte("payload")))
	f.Add(AppendRecord(nil, 0, 0, nil))
	f.Add([]byte{0, 0, 0, 1})
	f.Add(bytes.Repeat([]byte{0xff}, 40))
	f.Fuzz(func(t *testing.T, b []byte) {
		rec, n, err := DecodeRecord(b)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("unexpected error kind: %v", err)
			}
			return
		}
		if re := AppendRecord(nil, rec.LedgerID, rec.EntryID, rec.Payload); !bytes.Equal(re, b[:n]) {
			t.Fatal("re-encoding differs")
		}
	})
}

// countingFile records the writeback calls a Log makes.
type countingFile struct {
	vfs.File
	ends []int64
}

func (c *countingFile) Writeback(end int64) error {
	c.ends = append(c.ends, end)
	return c.File.(vfs.Writebacker).Writeback(end)
}

func TestWritebackEveryChunk(t *testing.T) {
	dir := t.TempDir()
	lg, err := Create(vfs.Default(), dir, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer lg.Close()
	cf := &countingFile{File: lg.File}
	lg.File = cf
	lg.Writeback.Step = 3 << 20
	payload := bytes.Repeat([]byte{7}, 64<<10)
	for i := int64(0); i < 200; i++ { // ~12.5 MiB, written in 1 MiB flushes
		if _, _, err := lg.Append(1, i, payload); err != nil {
			t.Fatal(err)
		}
	}
	if err := lg.Sync(); err != nil {
		t.Fatal(err)
	}
	if len(cf.ends) < 3 || len(cf.ends) > 5 {
		t.Fatalf("writeback ends %v: want one about every 3 MiB", cf.ends)
	}
	for i := 1; i < len(cf.ends); i++ {
		if d := cf.ends[i] - cf.ends[i-1]; d < 3<<20 {
			t.Fatalf("writeback ends %v: chunks under 3 MiB", cf.ends)
		}
	}
	for i := int64(0); i < 200; i += 37 {
		if _, err := lg.Read(1, i, HeaderSize+i*int64(RecordHeaderSize+len(payload)), RecordHeaderSize+len(payload)); err != nil {
			t.Fatalf("read %d after writeback: %v", i, err)
		}
	}
}
