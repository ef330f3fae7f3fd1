package bookie

import (
	"context"
	"time"

	"github.com/magnetar-io/magnetar/internal/bookieproto"
)

// Local returns the server as a bookieproto.Handler for a client in the same process (a
// standalone's broker; see bookieproto.ClientOptions.Local). Requests get the handling and
// answers they get over TCP, without the loopback socket: in a catch-up drain the socket's
// writes and reads and the response frame the client allocated were a third of the
// standalone's CPU and half of what it allocated. Per-connection limits do not apply; the
// storage's own bounds (journal queue, write cache) still do.
func (s *Server) Local() bookieproto.Handler { return localHandler{s} }

type localHandler struct{ s *Server }

// Handle implements bookieproto.Handler.
func (l localHandler) Handle(ctx context.Context, req bookieproto.Request, complete func(bookieproto.Response)) {
	s := l.s
	start := time.Now()
	resp, ok := newResponse(&req)
	if !ok {
		s.metrics.observe(resp.Op, resp.Status, time.Since(start))
		complete(resp)
		return
	}
	if req.Op != bookieproto.OpAddEntry {
		s.answer(ctx, s.log, &req, &resp)
		s.metrics.observe(resp.Op, resp.Status, time.Since(start))
		complete(resp)
		return
	}
	payload := req.Payload
	if len(req.Prefix) > 0 {
		// Storage copies the entry into the journal before AddEntry returns; the caller's
		// buffers are not kept either way.
		payload = make([]byte, 0, len(req.Prefix)+len(req.Payload))
		payload = append(append(payload, req.Prefix...), req.Payload...)
	}
	s.st.AddEntry(req.LedgerID, req.EntryID, req.MasterKey, req.LAC, payload, req.Flags&bookieproto.FlagRecovery != 0, func(err error) {
		r := resp
		r.Status = statusOf(err)
		logFailure(s.log, bookieproto.OpAddEntry, r.LedgerID, r.EntryID, r.Status, err)
		s.metrics.observe(r.Op, r.Status, time.Since(start))
		complete(r)
	})
}
