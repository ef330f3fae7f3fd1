package framebuf

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"testing"
)

// BenchmarkReadFull compares ReadFull with what every reader did before it (allocate the
// declared size, io.ReadFull into it) on frames of several sizes, read through a 64 KiB
// bufio.Reader as connections do. Run both in one invocation so machine load hits them alike:
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
				const frames = 8
				stream := bytes.Repeat([]byte{'f'}, frames*size)
				src := bytes.NewReader(stream)
				br := bufio.NewReaderSize(src, 64<<10)
				b.SetBytes(int64(size))
				b.ReportAllocs()
				n := 0
				for b.Loop() {
					if n == frames {
						src.Reset(stream)
						br.Reset(src)
						n = 0
					}
					if _, err := impl.read(br, size); err != nil {
						b.Fatal(err)
					}
					n++
				}
			})
		}
	}
}
