package bookieproto

import (
	"bufio"
	"context"
	"errors"
	"net"
	"sync"
	"testing"
	"time"
)

// scriptedBookie accepts one connection and hands every decoded request to answer, which
// writes whatever it likes back: a raw peer for testing the client's matching and failure
// handling without the real server.
func scriptedBookie(t *testing.T, answer func(w *bufio.Writer, reqs []Request) bool) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	go func() {
		nc, err := ln.Accept()
		if err != nil {
			return
		}
		defer nc.Close()
		br, bw := bufio.NewReader(nc), bufio.NewWriter(nc)
		var reqs []Request
		for {
			frame, err := ReadFrame(br, DefaultMaxFrameSize)
			if err != nil {
				return
			}
			req, err := DecodeRequest(frame)
			if err != nil {
				t.Errorf("client sent a bad frame: %v", err)
				return
			}
			reqs = append(reqs, req)
			if answer(bw, reqs) {
				reqs = nil
				if bw.Flush() != nil {
					return
				}
			}
		}
	}()
	return ln.Addr().String()
}

func TestClientMatchesOutOfOrderResponses(t *testing.T) {
	const n = 10
	addr := scriptedBookie(t, func(w *bufio.Writer, reqs []Request) bool {
		if len(reqs) < n {
			return false
		}
		for i := len(reqs) - 1; i >= 0; i-- { // answer newest first
			r := reqs[i]
			resp := Response{Op: r.Op, RequestID: r.RequestID, LedgerID: r.LedgerID, EntryID: r.EntryID, LAC: r.EntryID * 10}
			_, _ = w.Write(AppendResponse(nil, &resp))
		}
		return true
	})
	c := NewClient(ClientOptions{RequestTimeout: 30 * time.Second})
	defer c.Close()
	var wg sync.WaitGroup
	for i := int64(0); i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			e, err := c.ReadEntry(context.Background(), addr, ReadRequest{LedgerID: 1, EntryID: i})
			if err != nil || e.EntryID != i || e.LAC != i*10 {
				t.Errorf("read %d got %+v, %v", i, e, err)
			}
		}()
	}
	wg.Wait()
}

func TestClientFailsPendingOnMalformedResponse(t *testing.T) {
	addr := scriptedBookie(t, func(w *bufio.Writer, reqs []Request) bool {
		if len(reqs) < 3 {
			return false
		}
		_, _ = w.Write([]byte{0, 0, 0, 12, 7, 0x81, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1}) // bad version
		return true
	})
	c := NewClient(ClientOptions{RequestTimeout: 30 * time.Second})
	defer c.Close()
	errs := make(chan error, 3)
	for i := int64(0); i < 3; i++ {
		c.AddEntry(context.Background(), addr, AddRequest{LedgerID: 1, EntryID: i, LAC: -1}, func(err error) { errs <- err })
	}
	for i := 0; i < 3; i++ {
		if err := <-errs; !errors.Is(err, ErrUnavailable) || !Retriable(err) {
			t.Fatalf("pending add after a malformed response: %v", err)
		}
	}
}

func TestClientStatusAndContext(t *testing.T) {
	addr := scriptedBookie(t, func(w *bufio.Writer, reqs []Request) bool {
		r := reqs[len(reqs)-1]
		if r.Op == OpWaitLAC {
			return false // never answered: the caller's context ends it
		}
		resp := Response{Op: r.Op, RequestID: r.RequestID, LedgerID: r.LedgerID, Status: StatusFenced}
		_, _ = w.Write(AppendResponse(nil, &resp))
		return true
	})
	c := NewClient(ClientOptions{RequestTimeout: 30 * time.Second})
	defer c.Close()
	if _, err := c.ReadLAC(context.Background(), addr, 4, true, []byte("k")); !errors.Is(err, ErrFenced) {
		t.Fatalf("status mapping: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := c.WaitLAC(ctx, addr, 4, 0, time.Hour); !errors.Is(err, ErrTimeout) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("context deadline: %v", err)
	}
	if err := c.DeleteLedger(context.Background(), addr, 4); !errors.Is(err, ErrFenced) {
		t.Fatalf("connection still usable after an abandoned call: %v", err)
	}
	big := make([]byte, DefaultMaxFrameSize)
	done := make(chan error, 1)
	c.AddEntry(context.Background(), addr, AddRequest{LedgerID: 1, Payload: big}, func(err error) { done <- err })
	if err := <-done; !errors.Is(err, ErrBadRequest) {
		t.Fatalf("oversized add: %v", err)
	}
}
