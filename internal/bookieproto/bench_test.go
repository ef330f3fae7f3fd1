package bookieproto

import (
	"bufio"
	"bytes"
	"fmt"
	"testing"
)

// BenchmarkReadFrame reads add requests of several sizes through a 64 KiB bufio.Reader, as a
// bookie connection does: the frame reader must not cost more as it stops trusting the
// declared length (frames bigger than what has arrived grow their buffer as bytes come).
func BenchmarkReadFrame(b *testing.B) {
	for _, size := range []int{1 << 10, 64 << 10, 1 << 20} {
		b.Run(fmt.Sprintf("payload=%d", size), func(b *testing.B) {
			req := Request{Op: OpAddEntry, RequestID: 1, LedgerID: 7, EntryID: 3, LAC: 2, MasterKey: []byte("pw"), Payload: bytes.Repeat([]byte("p"), size)}
			frame := AppendRequest(nil, &req)
			stream := bytes.Repeat(frame, 16)
			src := bytes.NewReader(stream)
			br := bufio.NewReaderSize(src, 64<<10)
			b.SetBytes(int64(len(frame)))
			b.ReportAllocs()
			n := 0
			for b.Loop() {
				if n == 16 {
					src.Reset(stream)
					br.Reset(src)
					n = 0
				}
				if _, err := ReadFrame(br, 8<<20); err != nil {
					b.Fatal(err)
				}
				n++
			}
		})
	}
}
