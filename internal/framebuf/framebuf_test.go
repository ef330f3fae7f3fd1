package framebuf

import (
	"bytes"
	"errors"
	"io"
	"runtime"
	"sync"
	"testing"
	"testing/iotest"
)

func TestReadFullRoundTrip(t *testing.T) {
	for _, n := range []int{0, 1, 100, FirstStep - 1, FirstStep, FirstStep + 1, 3*FirstStep + 7, 5 << 20} {
		data := make([]byte, n)
		for i := range data {
			data[i] = byte(i*7 + i>>8)
		}
		readers := map[string]io.Reader{
			"whole":   bytes.NewReader(data),
			"onebyte": iotest.OneByteReader(bytes.NewReader(data)),
			"half":    iotest.HalfReader(bytes.NewReader(data)),
			"dataerr": iotest.DataErrReader(bytes.NewReader(data)),
		}
		for name, r := range readers {
			if name == "onebyte" && n > FirstStep+1 {
				continue // correct but slow under -race; "half" covers the larger sizes
			}
			got, err := ReadFull(io.MultiReader(r, bytes.NewReader([]byte("next frame"))), n)
			if err != nil {
				t.Fatalf("n=%d %s: %v", n, name, err)
			}
			if !bytes.Equal(got, data) || len(got) != n {
				t.Fatalf("n=%d %s: got %d bytes, not the %d sent", n, name, len(got), n)
			}
		}
	}
}

func TestReadFullErrors(t *testing.T) {
	for _, n := range []int{10, 5 << 20} {
		if _, err := ReadFull(bytes.NewReader(nil), n); !errors.Is(err, io.EOF) {
			t.Errorf("n=%d, nothing sent: %v, want io.EOF", n, err)
		}
		if _, err := ReadFull(bytes.NewReader(make([]byte, 5)), n); !errors.Is(err, io.ErrUnexpectedEOF) {
			t.Errorf("n=%d, 5 bytes sent: %v, want io.ErrUnexpectedEOF", n, err)
		}
		boom := errors.New("connection reset")
		if _, err := ReadFull(io.MultiReader(bytes.NewReader(make([]byte, 5)), iotest.ErrReader(boom)), n); !errors.Is(err, boom) {
			t.Errorf("n=%d, reset after 5 bytes: %v, want the reader's error", n, err)
		}
	}
}

// stallingReader hands out its bytes, then blocks until Release: a peer that declared a
// frame, sent part of it, and went quiet with the connection open.
type stallingReader struct {
	data    []byte
	drained chan struct{} // closed once every byte was read and the reader waits for more
	release chan struct{}
	once    sync.Once
}

func newStalling(data []byte, release chan struct{}) *stallingReader {
	return &stallingReader{data: data, drained: make(chan struct{}), release: release}
}

func (s *stallingReader) Read(p []byte) (int, error) {
	if len(s.data) > 0 {
		n := copy(p, s.data)
		s.data = s.data[n:]
		return n, nil
	}
	s.once.Do(func() { close(s.drained) })
	<-s.release
	return 0, io.EOF
}

// TestStalledFramesHoldWhatArrived: 200 peers each declare a 5 MiB frame, send 1,000 bytes
// and stall. Allocating the declared size would take 1 GiB; growing as bytes arrive takes
// one first step per peer. The bound is on bytes allocated (runtime.MemStats), not time.
func TestStalledFramesHoldWhatArrived(t *testing.T) {
	const peers, declared, sent = 200, 5 << 20, 1000
	release := make(chan struct{})
	readers := make([]*stallingReader, peers)
	for i := range readers {
		readers[i] = newStalling(make([]byte, sent), release)
	}
	var before, during runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	errs := make(chan error, peers)
	for _, r := range readers {
		go func() { _, err := ReadFull(r, declared); errs <- err }()
	}
	for _, r := range readers {
		<-r.drained
	}
	runtime.ReadMemStats(&during)
	close(release)
	for range peers {
		if err := <-errs; !errors.Is(err, io.ErrUnexpectedEOF) {
			t.Fatalf("stalled frame ended with %v, want io.ErrUnexpectedEOF", err)
		}
	}
	// Generous: twice the first steps plus 16 MiB for whatever else the runtime allocates;
	// the declared sizes would be 1,000 MiB.
	limit := uint64(2*peers*FirstStep + 16<<20)
	if grew := during.TotalAlloc - before.TotalAlloc; grew > limit {
		t.Fatalf("%d stalled peers that sent %d bytes each of a %d-byte frame allocated %d bytes (limit %d)", peers, sent, declared, grew, limit)
	}
}
