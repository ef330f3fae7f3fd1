package framebuf

import (
	"errors"
	"io"
	"sync"
)

// FirstStep is the largest buffer ReadFull allocates before any byte of the frame arrived:
// frames up to this size are read into one allocation of exactly their size. It matches
// the 64 KiB bufio.Reader every connection reads through, so a stalled peer holds no more
// than another read buffer's worth.
const FirstStep = 64 << 10

// chunks holds FirstStep-sized buffers for the first half of large frames; they go back as
// soon as the frame's own buffer exists, so the pool holds about one chunk per large frame
// in flight.
var chunks = sync.Pool{New: func() any { b := make([]byte, FirstStep); return &b }}

// ReadFull reads exactly n bytes from r into a fresh buffer of length n that the caller
// owns. Errors follow io.ReadFull: io.EOF when nothing was read, io.ErrUnexpectedEOF when
// some but not all of the n bytes came before the end of the stream.
//
// A frame larger than FirstStep is read in two halves: the first half into pooled chunks,
// then the frame's buffer is allocated (at most twice what has arrived by then), the
// chunks copied in and returned, and the second half read in place. So a peer that stalls
// holds at most one chunk beyond what it sent, or twice what it sent (three times while the
// chunks are copied); an honest frame costs the one allocation it always did plus a copy of
// its first half, and no garbage.
func ReadFull(r io.Reader, n int) ([]byte, error) {
	if n <= FirstStep {
		buf := make([]byte, n)
		if _, err := io.ReadFull(r, buf); err != nil {
			return nil, err
		}
		return buf, nil
	}
	half := n / 2
	var small [16]*[]byte // frames up to 2 MiB need no slice allocation for their chunks
	held := small[:0]
	release := func() {
		for _, c := range held {
			chunks.Put(c)
		}
	}
	got := 0
	for got < half {
		c := chunks.Get().(*[]byte)
		held = append(held, c)
		m, err := io.ReadFull(r, (*c)[:min(FirstStep, half-got)])
		got += m
		if err != nil {
			release()
			if errors.Is(err, io.EOF) && got > 0 {
				err = io.ErrUnexpectedEOF
			}
			return nil, err
		}
	}
	buf := make([]byte, n)
	off := 0
	for _, c := range held {
		off += copy(buf[off:got], *c)
	}
	release()
	if _, err := io.ReadFull(r, buf[got:]); err != nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return nil, err
	}
	return buf, nil
}
