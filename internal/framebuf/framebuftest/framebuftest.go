// Package framebuftest measures what a server allocates for peers that declare a large
// frame, send a little of it and stall with the connection open: the memory-amplification
// attack framebuf exists to defeat. Each protocol's tests serve a real TCP listener with
// their real server and assert a bound on the returned bytes.
package framebuftest

import (
	"bufio"
	"bytes"
	"net"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// hangDeadline only catches a server that never reads what was sent; it is not a timing
// assertion.
const hangDeadline = 2 * time.Minute

// StalledAlloc listens on a free loopback port, hands the listener to serve (which must
// serve it in the background and return), dials peers connections, writes send on each and
// leaves them open. Once the server has read every byte of send from every connection it
// returns the heap bytes allocated since just before the first dial (runtime.MemStats
// TotalAlloc, so memory the server allocated and never touched counts too). send is
// typically any handshake the server needs, then a frame header declaring the largest
// allowed length and a few bytes of its body. The connections close at cleanup.
func StalledAlloc(t testing.TB, serve func(net.Listener), peers int, send []byte) uint64 {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	cl := &countingListener{Listener: ln}
	serve(cl)
	var before, during runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for range peers {
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Close() })
		if _, err := c.Write(send); err != nil {
			t.Fatal(err)
		}
	}
	want := int64(peers) * int64(len(send))
	deadline := time.Now().Add(hangDeadline)
	for cl.read() < want {
		if time.Now().After(deadline) {
			t.Fatalf("the server read %d of the %d bytes %d stalled peers sent", cl.read(), want, peers)
		}
		time.Sleep(10 * time.Millisecond)
	}
	runtime.ReadMemStats(&during)
	return during.TotalAlloc - before.TotalAlloc
}

// countingListener counts the bytes the server read from all the connections it accepted.
type countingListener struct {
	net.Listener
	mu    sync.Mutex
	conns []*countingConn
}

func (l *countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	cc := &countingConn{Conn: c}
	l.mu.Lock()
	l.conns = append(l.conns, cc)
	l.mu.Unlock()
	return cc, nil
}

func (l *countingListener) read() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	var n int64
	for _, c := range l.conns {
		n += c.n.Load()
	}
	return n
}

type countingConn struct {
	net.Conn
	n atomic.Int64
}

func (c *countingConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.n.Add(int64(n))
	return n, err
}

// BenchFrames runs read over a stream of copies of frame read through a 64 KiB
// bufio.Reader, as connections read (the stream restarts every 16 frames): the benchmark of
// a protocol's frame reader. read must consume exactly one frame.
func BenchFrames(b *testing.B, frame []byte, read func(br *bufio.Reader) error) {
	const frames = 16
	stream := bytes.Repeat(frame, frames)
	src := bytes.NewReader(stream)
	br := bufio.NewReaderSize(src, 64<<10)
	b.SetBytes(int64(len(frame)))
	b.ReportAllocs()
	n := 0
	for b.Loop() {
		if n == frames {
			src.Reset(stream)
			br.Reset(src)
			n = 0
		}
		if err := read(br); err != nil {
			b.Fatal(err)
		}
		n++
	}
}
