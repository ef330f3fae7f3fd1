package kafka

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"fmt"
	"testing"

	"github.com/magnetar-io/magnetar/internal/framebuf/framebuftest"
)

// BenchmarkReadRequest reads size-prefixed requests of several sizes as a connection does:
// allocating a request's buffer as its bytes arrive must not cost the hot path.
func BenchmarkReadRequest(b *testing.B) {
	for _, size := range []int{1 << 10, 64 << 10, 1 << 20} {
		b.Run(fmt.Sprintf("body=%d", size), func(b *testing.B) {
			req := binary.BigEndian.AppendUint32(nil, uint32(size))
			req = append(req, bytes.Repeat([]byte("r"), size)...)
			framebuftest.BenchFrames(b, req, func(br *bufio.Reader) error {
				_, err := readRequest(br, 8<<20)
				return err
			})
		})
	}
}
