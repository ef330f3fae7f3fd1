package compression

import (
	"bytes"
	"crypto/rand"
	"errors"
	"testing"

	"github.com/magnetar-io/magnetar/internal/wire/pb"
)

var codecs = []pb.CompressionType{
	pb.CompressionType_NONE, pb.CompressionType_LZ4, pb.CompressionType_ZLIB,
	pb.CompressionType_ZSTD, pb.CompressionType_SNAPPY,
}

func inputs() map[string][]byte {
	random := make([]byte, 100_000)
	_, _ = rand.Read(random)
	return map[string][]byte{
		"empty":        {},
		"tiny":         []byte("hi"),
		"repetitive":   bytes.Repeat([]byte("magnetar "), 10_000),
		"random-small": random[:14],
		"random-15":    random[:15],
		"random-270":   random[:270],
		"random":       random,
	}
}

func TestRoundTrip(t *testing.T) {
	for _, c := range codecs {
		for name, in := range inputs() {
			t.Run(c.String()+"/"+name, func(t *testing.T) {
				enc, err := Compress(c, nil, in)
				if err != nil {
					t.Fatal(err)
				}
				out, err := Decompress(c, make([]byte, 8), enc, len(in))
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(out, in) {
					t.Fatalf("round trip changed %d bytes", len(in))
				}
			})
		}
	}
}

// TestLZ4IncompressibleIsLiteralBlock pins the hand-written literal block: token 0xF0,
// length continuation bytes, then the input verbatim.
func TestLZ4IncompressibleIsLiteralBlock(t *testing.T) {
	in := inputs()["random-270"]
	enc, err := Compress(pb.CompressionType_LZ4, nil, in)
	if err != nil {
		t.Fatal(err)
	}
	if len(enc) > len(in)+4 {
		t.Fatalf("incompressible input grew from %d to %d bytes", len(in), len(enc))
	}
	if enc[0]>>4 == 0xF && len(enc) == len(in)+3 {
		// 270-15 = 255 -> one 0xFF byte and a final 0x00.
		if enc[1] != 0xFF || enc[2] != 0 || !bytes.Equal(enc[3:], in) {
			t.Fatalf("unexpected literal block header % x", enc[:3])
		}
	}
	small := compressLZ4(nil, []byte("abc"))
	if !bytes.Equal(small, []byte{0x30, 'a', 'b', 'c'}) {
		t.Fatalf("literal block for 3 bytes = % x", small)
	}
}

func TestDecompressRejects(t *testing.T) {
	if _, err := Decompress(pb.CompressionType_ZSTD, nil, nil, MaxUncompressedSize+1); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("oversized declaration: %v", err)
	}
	if _, err := Decompress(pb.CompressionType(9), nil, nil, 1); !errors.Is(err, ErrUnknownCodec) {
		t.Fatalf("unknown codec: %v", err)
	}
	in := inputs()["repetitive"]
	for _, c := range codecs[1:] {
		enc, _ := Compress(c, nil, in)
		if _, err := Decompress(c, nil, enc, len(in)-1); !errors.Is(err, ErrCorrupt) {
			t.Errorf("%s with a short declared size: %v", c, err)
		}
		if _, err := Decompress(c, nil, enc[:len(enc)/2], len(in)); !errors.Is(err, ErrCorrupt) {
			t.Errorf("%s truncated: %v", c, err)
		}
	}
}

func FuzzDecompress(f *testing.F) {
	for _, c := range codecs {
		enc, _ := Compress(c, nil, []byte("hello hello hello hello"))
		f.Add(uint8(c), enc, uint16(23))
	}
	f.Add(uint8(1), []byte{0xF0, 0xFF, 0xFF}, uint16(500))
	f.Fuzz(func(t *testing.T, codec uint8, src []byte, size uint16) {
		c := pb.CompressionType(codec % 5)
		out, err := Decompress(c, nil, src, int(size))
		if err == nil && c != pb.CompressionType_NONE && len(out) != int(size) {
			t.Fatalf("%s: %d bytes, declared %d", c, len(out), size)
		}
	})
}
