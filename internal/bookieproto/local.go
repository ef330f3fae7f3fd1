package bookieproto

import (
	"context"
	"sync/atomic"
)

// Handler serves requests in the process that sends them (see ClientOptions.Local).
type Handler interface {
	// Handle runs req and calls complete exactly once with the response, whose status
	// says how it went. For an add, Prefix then Payload are the entry. complete may run
	// before Handle returns. Payloads in the response are the caller's.
	Handle(ctx context.Context, req Request, complete func(Response))
}

// sendLocal runs req on an in-process bookie. Reads and the other calls run on the
// caller's goroutine (a local read cannot be faster on another, and the handler honours
// ctx where it waits, as in a long poll). Adds differ, for two reasons:
//   - Over a socket an add completes on the client's reader goroutine, never inside
//     AddEntry, and callers rely on that (the ledger's autorecovery sends the result on
//     a channel it reads only after AddEntry returns). A completion that comes before
//     Handle returns (an add refused at once) is moved to its own goroutine.
//   - The caller's context still ends the wait, as the sweeper does for a socket: a
//     journal stuck on a dying disk fails the add with ErrTimeout, and the ledger can
//     replace the bookie. A late answer is then dropped.
func sendLocal(ctx context.Context, h Handler, req Request, complete func(Response, error)) {
	if req.Op != OpAddEntry {
		h.Handle(ctx, req, func(resp Response) { complete(resp, nil) })
		return
	}
	a := &localAdd{complete: complete}
	a.inline.Store(true)
	stop := context.AfterFunc(ctx, func() { a.finish(Response{}, ctxErr(ctx.Err())) })
	h.Handle(ctx, req, func(resp Response) {
		stop()
		a.finish(resp, nil)
	})
	a.inline.Store(false)
}

// localAdd is one add to an in-process bookie: whichever of the answer and the end of
// the context comes first completes it.
type localAdd struct {
	done     atomic.Bool
	inline   atomic.Bool // Handle has not returned yet
	complete func(Response, error)
}

func (a *localAdd) finish(resp Response, err error) {
	if !a.done.CompareAndSwap(false, true) {
		return
	}
	if a.inline.Load() {
		go a.complete(resp, err)
		return
	}
	a.complete(resp, err)
}
