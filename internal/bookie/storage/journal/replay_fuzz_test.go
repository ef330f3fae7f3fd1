package journal

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/magnetar-io/magnetar/internal/bookie/storage/vfs"
	"github.com/magnetar-io/magnetar/internal/logging"
)

// FuzzReplay replays a journal file holding the fuzzer's bytes after a valid header. Replay
// must not panic or fail (damage is skipped or reported, never fatal: BookKeeper #2220);
// every record it delivers re-encodes to the file's bytes where it ends; every reported
// damage lies inside the file; and records before the first damage are delivered in order.
func FuzzReplay(f *testing.F) {
	var seed []byte
	for i := range 5 {
		r := Record{Kind: KindAdd, LedgerID: 3, EntryID: int64(i), LAC: int64(i) - 1, MasterKey: []byte("key"), Payload: bytes.Repeat([]byte{byte(i + 1)}, 700)}
		seed = r.AppendTo(seed)
	}
	f.Add(seed)
	flipped := bytes.Clone(seed)
	flipped[len(flipped)/2] ^= 4
	f.Add(flipped)
	f.Add(append(bytes.Clone(seed[:len(seed)-100]), make([]byte, 600)...))
	f.Add([]byte{0x7f, 0xff, 0xff, 0xff, 1, 2, 3, 4, 5})
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 1<<20 {
			return
		}
		dir := t.TempDir()
		file := append(fileHeader(1), data...)
		if err := os.WriteFile(filepath.Join(dir, FileName(1)), file, 0o644); err != nil {
			t.Fatal(err)
		}
		var ends []int64
		st, err := Replay(vfs.Default(), dir, Pos{}, logging.Discard(), func(r *Record, end Pos) error {
			if end.File != 1 || end.Offset > int64(len(file)) {
				t.Fatalf("record ends at %+v past the file (%d bytes)", end, len(file))
			}
			enc := r.AppendTo(nil)
			if !bytes.Equal(enc, file[end.Offset-int64(len(enc)):end.Offset]) {
				t.Fatalf("record ending at %d does not re-encode to the file's bytes", end.Offset)
			}
			if len(ends) > 0 && end.Offset <= ends[len(ends)-1] {
				t.Fatalf("records out of order: %d after %d", end.Offset, ends[len(ends)-1])
			}
			ends = append(ends, end.Offset)
			return nil
		})
		if err != nil && !errors.Is(err, ErrCorrupt) {
			t.Fatalf("replay failed: %v", err)
		}
		if st.Records != len(ends) {
			t.Fatalf("stats say %d records, %d delivered", st.Records, len(ends))
		}
		for _, d := range st.Damaged {
			if d.Offset < HeaderSize || d.Offset+d.Size > int64(len(file)) || d.Size <= 0 {
				t.Fatalf("damage %+v outside the file (%d bytes)", d, len(file))
			}
		}
	})
}
