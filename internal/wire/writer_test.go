package wire

import (
	"bufio"
	"bytes"
	"testing"
)

// TestWriterReferencedEntries mixes copied and referenced entries and checks that WriteTo
// and Bytes produce the same stream, that every frame decodes with its entry intact, and
// that a large frame comes back from the Reader as Owned.
func TestWriterReferencedEntries(t *testing.T) {
	small := testEntry(t, []byte("x"))
	big := testEntry(t, bytes.Repeat([]byte("b"), 3*retainLimit))
	mid := testEntry(t, bytes.Repeat([]byte("m"), refThreshold))
	var w Writer
	entries := [][]byte{small, big, nil, mid, small, big}
	for round := 0; round < 2; round++ {
		for i, e := range entries {
			var err error
			if e == nil {
				err = w.WriteCommand(ping())
			} else {
				err = w.WritePayloadCommand(send(uint64(i)), nil, e)
			}
			if err != nil {
				t.Fatal(err)
			}
		}
		flat := append([]byte(nil), w.Bytes()...)
		if len(flat) != w.Len() {
			t.Fatalf("Bytes has %d bytes, Len says %d", len(flat), w.Len())
		}
		var out bytes.Buffer
		if _, err := w.WriteTo(&out); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(out.Bytes(), flat) {
			t.Fatal("WriteTo and Bytes differ")
		}
		w.Reset()
		if w.Len() != 0 {
			t.Fatal("reset kept bytes")
		}
		r := NewReader(bufio.NewReaderSize(bytes.NewReader(flat), 64*1024), 0)
		for i, e := range entries {
			f, err := r.ReadFrame()
			if err != nil {
				t.Fatalf("frame %d: %v", i, err)
			}
			if e == nil {
				continue
			}
			_, got, err := SplitHeadersAndPayload(f.HeadersAndPayload)
			if err != nil || !bytes.Equal(got, e) {
				t.Fatalf("frame %d: entry differs (%v)", i, err)
			}
			if want := len(e) > retainLimit; f.Owned != want {
				t.Fatalf("frame %d of %d bytes: Owned %v, want %v", i, len(e), f.Owned, want)
			}
		}
	}
}

// BenchmarkWriterLargeEntries is the dispatch of 128 KiB batches: referenced entries
// allocate nothing per frame once the Writer is warm.
func BenchmarkWriterLargeEntries(b *testing.B) {
	big := testEntry(b, bytes.Repeat([]byte("b"), 128*1024))
	var w Writer
	var sink bytes.Buffer
	b.ReportAllocs()
	b.SetBytes(int64(len(big)))
	for b.Loop() {
		for range 4 {
			if err := w.WritePayloadCommand(send(1), nil, big); err != nil {
				b.Fatal(err)
			}
		}
		sink.Reset()
		_, _ = w.WriteTo(discard{})
		w.Reset()
	}
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }
