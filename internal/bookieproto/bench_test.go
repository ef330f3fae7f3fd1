package bookieproto

import (
	"bufio"
	"bytes"
	"fmt"
	"testing"

	"github.com/magnetar-io/magnetar/internal/framebuf/framebuftest"
)

// BenchmarkReadFrame reads add requests of several sizes as a bookie connection does: the
// frame reader must not cost more for allocating as the bytes arrive (framebuf.ReadFull).
func BenchmarkReadFrame(b *testing.B) {
	for _, size := range []int{1 << 10, 64 << 10, 1 << 20} {
		b.Run(fmt.Sprintf("payload=%d", size), func(b *testing.B) {
			req := Request{Op: OpAddEntry, RequestID: 1, LedgerID: 7, EntryID: 3, LAC: 2, MasterKey: []byte("pw"), Payload: bytes.Repeat([]byte("p"), size)}
			framebuftest.BenchFrames(b, AppendRequest(nil, &req), func(br *bufio.Reader) error {
				_, err := ReadFrame(br, 8<<20)
				return err
			})
		})
	}
}
