package kafka

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"fmt"
	"testing"
)

// BenchmarkReadRequest reads size-prefixed requests of several sizes through the
// connection's 64 KiB bufio.Reader: growing a request's buffer as its bytes arrive must not
// cost the hot path.
func BenchmarkReadRequest(b *testing.B) {
	for _, size := range []int{1 << 10, 64 << 10, 1 << 20} {
		b.Run(fmt.Sprintf("body=%d", size), func(b *testing.B) {
			req := binary.BigEndian.AppendUint32(nil, uint32(size))
			req = append(req, bytes.Repeat([]byte("r"), size)...)
			stream := bytes.Repeat(req, 16)
			src := bytes.NewReader(stream)
			br := bufio.NewReaderSize(src, 64<<10)
			b.SetBytes(int64(len(req)))
			b.ReportAllocs()
			n := 0
			for b.Loop() {
				if n == 16 {
					src.Reset(stream)
					br.Reset(src)
					n = 0
				}
				if _, err := readRequest(br, 8<<20); err != nil {
					b.Fatal(err)
				}
				n++
			}
		})
	}
}
