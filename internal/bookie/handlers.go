package bookie

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/magnetar-io/magnetar/internal/bookie/storage"
	"github.com/magnetar-io/magnetar/internal/bookieproto"
)

// storageErrors maps storage errors to the protocol's sentinels (whose status codes the
// bookieproto table gives). Anything else is an internal error.
var storageErrors = []struct{ from, to error }{
	{storage.ErrNoSuchEntry, bookieproto.ErrNoSuchEntry},
	{storage.ErrNoSuchLedger, bookieproto.ErrNoSuchLedger},
	{storage.ErrFenced, bookieproto.ErrFenced},
	{storage.ErrUnauthorized, bookieproto.ErrUnauthorized},
	{storage.ErrReadOnly, bookieproto.ErrReadOnly},
	{storage.ErrCorrupt, bookieproto.ErrCorrupt},
	{storage.ErrClosed, bookieproto.ErrServer},
}

// statusOf maps a storage error to its wire status.
func statusOf(err error) bookieproto.Status {
	if err == nil {
		return bookieproto.StatusOK
	}
	for _, m := range storageErrors {
		if errors.Is(err, m.from) {
			return bookieproto.StatusOf(m.to)
		}
	}
	return bookieproto.StatusOf(err)
}

// errBadIDs rejects negative ids before they reach storage.
var errBadIDs = fmt.Errorf("%w: negative ledger or entry id", bookieproto.ErrBadRequest)

// newResponse starts the response to req; !ok when req's ids are refused already.
func newResponse(req *bookieproto.Request) (resp bookieproto.Response, ok bool) {
	resp = bookieproto.Response{Op: req.Op, RequestID: req.RequestID, LedgerID: req.LedgerID, EntryID: req.EntryID, LAC: -1}
	if req.LedgerID < 0 || req.EntryID < 0 {
		resp.Status = bookieproto.StatusOf(errBadIDs)
		return resp, false
	}
	return resp, true
}

// dispatch runs one decoded request. Adds are handed to storage synchronously, in the order
// they were read; everything else runs on its own goroutine.
func (s *Server) dispatch(c *serverConn, req bookieproto.Request, cost int64) {
	start := time.Now()
	resp, ok := newResponse(&req)
	if !ok {
		c.respond(resp, cost, start)
		return
	}
	if req.Op == bookieproto.OpAddEntry {
		recovery := req.Flags&bookieproto.FlagRecovery != 0
		ledgerID, entryID := req.LedgerID, req.EntryID
		// The callback copies resp instead of writing to it, so the closure captures it by
		// value: one allocation per add fewer on the hot path.
		s.st.AddEntry(req.LedgerID, req.EntryID, req.MasterKey, req.LAC, req.Payload, recovery, func(err error) {
			r := resp
			r.Status = statusOf(err)
			if r.Status != bookieproto.StatusOK {
				logFailure(c.log, bookieproto.OpAddEntry, ledgerID, entryID, r.Status, err)
			}
			c.respond(r, cost, start)
		})
		return
	}
	s.runAsync(c, req, resp, cost, start)
}

// runAsync runs a non-add request on its own goroutine. It is a separate function so that
// the goroutine's captures do not force dispatch's request and response onto the heap for
// every add.
func (s *Server) runAsync(c *serverConn, req bookieproto.Request, resp bookieproto.Response, cost int64, start time.Time) {
	c.handlers.Add(1)
	go func() {
		defer c.handlers.Done()
		s.answer(c.ctx, c.log, &req, &resp)
		c.respond(resp, cost, start)
	}()
}

// answer runs a non-add request and sets the response's status.
func (s *Server) answer(ctx context.Context, log *slog.Logger, req *bookieproto.Request, resp *bookieproto.Response) {
	err := s.handle(ctx, req, resp)
	resp.Status = statusOf(err)
	if resp.Status != bookieproto.StatusOK {
		resp.Payload, resp.Entries = nil, nil
	}
	logFailure(log, req.Op, req.LedgerID, req.EntryID, resp.Status, err)
}

// logFailure logs errors that point at the bookie rather than at the request.
func logFailure(log *slog.Logger, op bookieproto.Op, ledgerID, entryID int64, st bookieproto.Status, err error) {
	switch st {
	case bookieproto.StatusCorrupt:
		log.Error("entry corrupt or unreadable", "op", op, "ledger", ledgerID, "entry", entryID, "err", err)
	case bookieproto.StatusServerError:
		log.Warn("request failed", "op", op, "ledger", ledgerID, "entry", entryID, "err", err)
	}
}

// handle runs a non-add request against storage, filling resp.
func (s *Server) handle(ctx context.Context, req *bookieproto.Request, resp *bookieproto.Response) error {
	fence := req.Flags&bookieproto.FlagFence != 0
	switch req.Op {
	case bookieproto.OpReadEntry:
		if fence {
			// Fence before reading: a bookie that answered "no such entry" to a recovery read
			// must never accept that entry afterwards (BookKeeper #2614).
			if _, err := s.st.Fence(req.LedgerID, req.MasterKey); err != nil {
				return err
			}
		}
		p, err := s.st.ReadEntry(req.LedgerID, req.EntryID)
		if err != nil {
			return err
		}
		resp.Payload = p
		resp.LAC = s.lac(req.LedgerID)
		return nil
	case bookieproto.OpReadRange:
		return s.readRange(ctx, req, resp)
	case bookieproto.OpReadLAC:
		var lac int64
		var err error
		if fence {
			lac, err = s.st.Fence(req.LedgerID, req.MasterKey)
		} else {
			lac, err = s.st.LAC(req.LedgerID)
		}
		resp.LAC = lac
		return err
	case bookieproto.OpWaitLAC:
		timeout := min(time.Duration(req.TimeoutMs)*time.Millisecond, s.cfg.MaxLongPollTimeout)
		wctx, cancel := context.WithTimeout(ctx, timeout)
		defer cancel()
		lac, err := s.st.WaitLAC(wctx, req.LedgerID, req.LAC)
		resp.LAC = lac
		if err != nil && wctx.Err() != nil && ctx.Err() == nil {
			// The poll timed out: the answer is the current LAC, not an error.
			if lac, err = s.st.LAC(req.LedgerID); err == nil {
				resp.LAC = lac
			}
		}
		return err
	case bookieproto.OpDelete:
		return s.st.DeleteLedger(req.LedgerID)
	}
	return fmt.Errorf("%w: op %v", bookieproto.ErrBadRequest, req.Op)
}

// unread gives back an entry a range read took but will not send: it starts the next range,
// and a read-ahead entry taken from the read cache would otherwise be read from disk again,
// with a new read-ahead span (4.6x the bytes read in a catch-up drain).
func (s *Server) unread(ledgerID, entryID int64, p []byte) {
	if u, ok := s.st.(storage.Unreader); ok {
		u.Unread(ledgerID, entryID, p)
	}
}

// lac is the ledger's LAC for a read response; -1 when unknown.
func (s *Server) lac(ledgerID int64) int64 {
	lac, err := s.st.LAC(ledgerID)
	if err != nil {
		return -1
	}
	return lac
}

// readRange reads entries first..last in order until the payload budget (the request's
// maxBytes and the frame limit) would be exceeded or an entry cannot be read. An error on
// the first entry is the response's status; a later one just ends the batch, and the
// caller's next request starting there reports it (so a corrupt entry is never skipped).
func (s *Server) readRange(ctx context.Context, req *bookieproto.Request, resp *bookieproto.Response) error {
	if req.LastID < req.EntryID {
		resp.LAC = s.lac(req.LedgerID)
		return nil
	}
	budget := int(req.MaxBytes)
	total := 0
	for id := req.EntryID; ; id++ {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		p, err := s.st.ReadEntry(req.LedgerID, id)
		if err != nil {
			if len(resp.Entries) == 0 {
				return err
			}
			break
		}
		first := len(resp.Entries) == 0
		overFrame := total+len(p) > bookieproto.RangeBudget(s.cfg.MaxFrameSizeBytes, len(resp.Entries)+1)
		if overFrame && first {
			return fmt.Errorf("%w: entry %d of %d bytes does not fit a range response; read it alone",
				bookieproto.ErrBadRequest, id, len(p))
		}
		if overFrame || total+len(p) > budget && !first {
			s.unread(req.LedgerID, id, p)
			break
		}
		total += len(p)
		resp.Entries = append(resp.Entries, bookieproto.Entry{LedgerID: req.LedgerID, EntryID: id, Payload: p})
		if id == req.LastID || total >= budget {
			break
		}
	}
	resp.LAC = s.lac(req.LedgerID)
	for i := range resp.Entries {
		resp.Entries[i].LAC = resp.LAC
	}
	return nil
}
