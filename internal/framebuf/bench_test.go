package framebuf

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"testing"

	"github.com/magnetar-io/magnetar/internal/framebuf/framebuftest"
)

// BenchmarkReadFull compares ReadFull with what every reader did before it (allocate the
// declared size, io.ReadFull into it) on frames of several sizes. Run both in one
// invocation so machine load hits them alike:
//
//	go test -run XXX -bench ReadFull -count 6 ./internal/framebuf/
func BenchmarkReadFull(b *testing.B) {
	declared := func(r io.Reader, n int) ([]byte, error) {
		buf := make([]byte, n)
		_, err := io.ReadFull(r, buf)
		return buf, err
	}
	for _, size := range []int{1 << 10, 64<<10 + 100, 1 << 20, 5 << 20} {
		for _, impl := range []struct {
			name string
			read func(io.Reader, int) ([]byte, error)
		}{{"declared", declared}, {"growing", ReadFull}} {
			b.Run(fmt.Sprintf("size=%d/%s", size, impl.name), func(b *testing.B) {
				framebuftest.BenchFrames(b, bytes.Repeat([]byte{'f'}, size), func(br *bufio.Reader) error {
					_, err := impl.read(br, size)
					return err
				})
			})
		}
	}
}
