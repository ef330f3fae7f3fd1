package offload

import (
	"bytes"
	"errors"
	"testing"
)

func sampleIndex() *index {
	return &index{LedgerID: 9, LastEntry: 4, LedgerLength: 50, DataLength: 24 + 5*16 + 50 + 24,
		BlockSize: 1 << 20, Metadata: map[string]string{"ManagedLedgerName": "a/b/persistent/c"},
		Blocks: []blockInfo{{0, 0, 24 + 3*16 + 30}, {3, 24 + 3*16 + 30, 24 + 2*16 + 20}},
		Seeks:  []seekPoint{{0, 0}, {2, 24 + 2*16 + 20}, {3, 24 + 3*16 + 30}}}
}

func TestIndexRoundTrip(t *testing.T) {
	ix := sampleIndex()
	b := encodeIndex(ix)
	got, err := decodeIndex(b, 9)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(encodeIndex(got), b) {
		t.Fatal("index does not round-trip")
	}
	if _, err := decodeIndex(b, 10); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("wrong ledger: %v", err)
	}
	for i := range b {
		if _, err := decodeIndex(b[:i], 9); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("truncated at %d: %v", i, err)
		}
	}
	c := ix.chunkFor(2)
	if c.Seq != 1 || c.First != 2 || c.Last != 2 || c.BlockStart {
		t.Fatalf("chunk of entry 2: %+v", c)
	}
	if c := ix.chunkFor(4); c.Seq != 2 || c.First != 3 || c.Last != 4 || !c.BlockStart || c.Offset+c.Length != ix.DataLength {
		t.Fatalf("chunk of entry 4: %+v", c)
	}
}

func TestIndexRejectsBadTables(t *testing.T) {
	for name, mutate := range map[string]func(*index){
		"gap between blocks":      func(ix *index) { ix.Blocks[1].Offset++ },
		"block not a seek":        func(ix *index) { ix.Seeks = ix.Seeks[:2] },
		"seeks descending":        func(ix *index) { ix.Seeks[1], ix.Seeks[2] = ix.Seeks[2], ix.Seeks[1] },
		"seek outside data":       func(ix *index) { ix.Seeks[2].Offset = ix.DataLength },
		"data length mismatch":    func(ix *index) { ix.DataLength++ },
		"first block not entry 0": func(ix *index) { ix.Blocks[0].FirstEntry = 1; ix.Seeks[0].Entry = 1 },
	} {
		ix := sampleIndex()
		mutate(ix)
		if _, err := decodeIndex(encodeIndex(ix), 9); !errors.Is(err, ErrCorrupt) {
			t.Errorf("%s: %v", name, err)
		}
	}
}

func FuzzIndex(f *testing.F) {
	f.Add(encodeIndex(sampleIndex()))
	f.Add(encodeIndex(&index{LedgerID: 9, LastEntry: -1}))
	f.Fuzz(func(t *testing.T, b []byte) {
		ix, err := decodeIndex(b, 9)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("error not ErrCorrupt: %v", err)
			}
			return
		}
		// Whatever decodes must be safe to navigate.
		for e := int64(0); e <= ix.LastEntry && e < 1000; e++ {
			c := ix.chunkFor(e)
			if c.First > e || c.Last < e || c.Offset < 0 || c.Offset+c.Length > ix.DataLength {
				t.Fatalf("chunk %+v for entry %d", c, e)
			}
		}
	})
}

func FuzzChunk(f *testing.F) {
	var b []byte
	b = appendBlockHeader(b, 9, 0)
	for i, p := range [][]byte{[]byte("a"), {}, []byte("hello")} {
		b = appendFrameHeader(b, int64(i), p)
		b = append(b, p...)
	}
	f.Add(b, true)
	f.Add(b[24:], false)
	f.Fuzz(func(t *testing.T, b []byte, blockStart bool) {
		frames, err := parseChunk(b, 9, 0, blockStart, nil)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("error not ErrCorrupt: %v", err)
			}
			return
		}
		for i, fr := range frames {
			if fr.Entry != int64(i) {
				t.Fatalf("frame %d is entry %d", i, fr.Entry)
			}
		}
	})
}
