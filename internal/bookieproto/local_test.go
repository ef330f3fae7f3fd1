package bookieproto

import (
	"context"
	"errors"
	"testing"
	"time"
)

// funcHandler is a Handler made of a function.
type funcHandler func(ctx context.Context, req Request, complete func(Response))

func (f funcHandler) Handle(ctx context.Context, req Request, complete func(Response)) {
	f(ctx, req, complete)
}

const localAddr = "local:1"

func localClient(h Handler) Client {
	return NewClient(ClientOptions{Local: map[string]Handler{localAddr: h}})
}

// An add answered inside Handle (a refusal) must not complete inside AddEntry: callers
// read the result from a channel only after AddEntry returns, as they may over a socket.
func TestLocalInlineAnswerCompletesAfterAddEntryReturns(t *testing.T) {
	c := localClient(funcHandler(func(_ context.Context, req Request, complete func(Response)) {
		complete(Response{Op: req.Op, LedgerID: req.LedgerID, EntryID: req.EntryID, Status: StatusFenced})
	}))
	defer c.Close()
	done := make(chan error) // unbuffered: an inline completion would block AddEntry forever
	returned := make(chan struct{})
	go func() {
		c.AddEntry(context.Background(), localAddr, AddRequest{LedgerID: 1, EntryID: 0, Payload: []byte("x")}, func(err error) { done <- err })
		close(returned)
	}()
	select {
	case <-returned:
	case <-time.After(30 * time.Second):
		t.Fatal("AddEntry did not return: the completion ran inside it")
	}
	if err := <-done; !errors.Is(err, ErrFenced) {
		t.Fatalf("add: %v, want ErrFenced", err)
	}
}

// An add the handler never answers fails when the caller's context ends, once; the late
// answer is dropped.
func TestLocalAddTimesOutWithContext(t *testing.T) {
	answer := make(chan func(Response), 1)
	c := localClient(funcHandler(func(_ context.Context, _ Request, complete func(Response)) { answer <- complete }))
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	calls := make(chan error, 2)
	c.AddEntry(ctx, localAddr, AddRequest{LedgerID: 1, EntryID: 0, Payload: []byte("x")}, func(err error) { calls <- err })
	if err := <-calls; !errors.Is(err, ErrTimeout) {
		t.Fatalf("add past its deadline: %v, want ErrTimeout", err)
	}
	(<-answer)(Response{Op: OpAddEntry, Status: StatusOK})
	select {
	case err := <-calls:
		t.Fatalf("second completion: %v", err)
	case <-time.After(100 * time.Millisecond):
	}
}

// Requests reach the handler whole (an add's prefix and payload, a read's range) and a
// status comes back as the same wrapped sentinel as over a socket.
func TestLocalRequestsAndStatuses(t *testing.T) {
	var got []Request
	c := localClient(funcHandler(func(_ context.Context, req Request, complete func(Response)) {
		got = append(got, req)
		switch req.Op {
		case OpReadRange:
			complete(Response{Op: req.Op, Entries: []Entry{{LedgerID: 3, EntryID: 4, Payload: []byte("p")}}})
		case OpReadEntry:
			complete(Response{Op: req.Op, Status: StatusNoSuchEntry})
		default:
			complete(Response{Op: req.Op, LAC: 9})
		}
	}))
	defer c.Close()
	ctx := context.Background()
	done := make(chan error, 1)
	c.AddEntry(ctx, localAddr, AddRequest{LedgerID: 3, EntryID: 4, Prefix: []byte("ab"), Payload: []byte("cd"), Recovery: true}, func(err error) { done <- err })
	if err := <-done; err != nil {
		t.Fatalf("add: %v", err)
	}
	if r := got[0]; r.Op != OpAddEntry || string(r.Prefix)+string(r.Payload) != "abcd" || r.Flags&FlagRecovery == 0 {
		t.Fatalf("add request: %+v", r)
	}
	es, err := c.ReadRange(ctx, localAddr, 3, 4, 10, 1<<20)
	if err != nil || len(es) != 1 || string(es[0].Payload) != "p" {
		t.Fatalf("range: %+v %v", es, err)
	}
	if r := got[1]; r.LedgerID != 3 || r.EntryID != 4 || r.LastID != 10 || r.MaxBytes != 1<<20 {
		t.Fatalf("range request: %+v", r)
	}
	if _, err := c.ReadEntry(ctx, localAddr, ReadRequest{LedgerID: 3, EntryID: 5}); !errors.Is(err, ErrNoSuchEntry) {
		t.Fatalf("read: %v, want ErrNoSuchEntry", err)
	}
	if lac, err := c.ReadLAC(ctx, localAddr, 3, false, nil); err != nil || lac != 9 {
		t.Fatalf("lac: %d %v", lac, err)
	}
}
