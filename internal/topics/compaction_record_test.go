package topics

import (
	"bytes"
	"slices"
	"testing"
)

func TestCompactedRecordRoundTrip(t *testing.T) {
	for _, r := range []compactedRecord{
		{pos: Position{LedgerID: 0, EntryID: 0}, data: nil},
		{pos: Position{LedgerID: 12345, EntryID: 1 << 40}, kept: []uint64{0b1011, 1 << 63}, data: []byte("entry bytes")},
	} {
		got, err := decodeCompactedRecord(appendCompactedRecord(nil, r))
		if err != nil {
			t.Fatal(err)
		}
		if got.pos != r.pos || !slices.Equal(got.kept, r.kept) || !bytes.Equal(got.data, r.data) {
			t.Fatalf("got %+v, want %+v", got, r)
		}
	}
	for _, bad := range [][]byte{nil, {2}, {1}, {1, 0x80}, {1, 1, 1, 5, 0, 0}} {
		if _, err := decodeCompactedRecord(bad); err == nil {
			t.Fatalf("%x decoded", bad)
		}
	}
}

// FuzzCompactedRecord: any bytes decode or fail cleanly, and what decodes encodes back to
// the same record.
func FuzzCompactedRecord(f *testing.F) {
	f.Add(appendCompactedRecord(nil, compactedRecord{pos: Position{LedgerID: 3, EntryID: 7}, kept: []uint64{5}, data: []byte("x")}))
	f.Add([]byte{1, 0, 0, 0})
	f.Add([]byte{1, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01})
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := decodeCompactedRecord(b)
		if err != nil {
			return
		}
		if r.pos.LedgerID < 0 || r.pos.EntryID < 0 {
			t.Fatalf("negative position %v", r.pos)
		}
		again, err := decodeCompactedRecord(appendCompactedRecord(nil, r))
		if err != nil || again.pos != r.pos || !slices.Equal(again.kept, r.kept) || !bytes.Equal(again.data, r.data) {
			t.Fatalf("round trip: %+v vs %+v (%v)", again, r, err)
		}
	})
}
