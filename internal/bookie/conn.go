package bookie

import (
	"bufio"
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"os"
	"sync"
	"time"

	"github.com/magnetar-io/magnetar/internal/bookieproto"
)

// serverConn is one client connection. Design:
//
//   - The read loop reads a frame, reserves its cost against the connection's in-flight
//     budget (requests and bytes, both bounded by config), decodes it and dispatches it. When
//     the budget is spent it stops reading; TCP then pushes back on the client. It never
//     waits on anything else, so a slow storage call cannot stall the loop except through the
//     budget (Storage.AddEntry itself may block while the write cache is full: that is the
//     storage's backpressure and it reaches the client the same way).
//   - Adds go to Storage.AddEntry straight from the read loop, which keeps the journal order
//     equal to the order the client sent them; their response is queued from the storage's
//     done callback, i.e. only after the fsync. Other ops run on a goroutine each (bounded by
//     the request budget) because they read the disk or long-poll.
//   - The write loop takes every queued response at once, encodes them into a bufio.Writer
//     and flushes when the queue is empty: under load many responses share one write(2).
//     Writing a response returns its cost to the budget and wakes the read loop.
//   - A malformed frame or an I/O error closes this connection only, with a logged reason.
//     Responses of requests still running are dropped when they complete.
type serverConn struct {
	s      *Server
	nc     net.Conn
	log    *slog.Logger
	ctx    context.Context // cancelled on close: ends long polls and range reads
	cancel context.CancelFunc

	mu       sync.Mutex
	readable *sync.Cond // the budget has room, or closing
	writable *sync.Cond // responses queued, or closing
	reqs     int        // requests read and not yet answered
	bytes    int64      // their frame bytes plus queued response payload bytes
	out      []queued
	closing  bool
	draining bool // shutdown: stop reading, answer what was read
	flushed  bool // the write loop has nothing buffered

	handlers sync.WaitGroup
}

// queued is a response waiting for the write loop, with the budget it holds.
type queued struct {
	resp bookieproto.Response
	cost int64
}

// frameCost is what a request costs beyond its frame bytes (bookkeeping, response header).
const frameCost = 64

func newServerConn(s *Server, nc net.Conn, id uint64) *serverConn {
	ctx, cancel := context.WithCancel(context.Background())
	c := &serverConn{s: s, nc: nc, ctx: ctx, cancel: cancel, flushed: true,
		log: s.log.With("conn", id, "remote", nc.RemoteAddr().String())}
	c.readable = sync.NewCond(&c.mu)
	c.writable = sync.NewCond(&c.mu)
	return c
}

func (c *serverConn) readLoop() {
	if err := c.handshake(); err != nil {
		c.close("tls: " + err.Error())
		return
	}
	br := bufio.NewReaderSize(c.nc, 64<<10)
	maxFrame := c.s.cfg.MaxFrameSizeBytes
	for {
		frame, err := bookieproto.ReadFrame(br, maxFrame)
		if err != nil {
			c.readFailed(err)
			return
		}
		cost := int64(len(frame)) + frameCost
		if !c.acquire(cost) {
			return
		}
		req, err := bookieproto.DecodeRequest(frame)
		if err != nil {
			if errors.Is(err, bookieproto.ErrUnknownOp) {
				// Well framed but from a newer client: answer instead of hanging up.
				c.log.Debug("unknown op", "op", req.Op, "err", err)
				c.respond(bookieproto.Response{Op: req.Op, RequestID: req.RequestID, Status: bookieproto.StatusBadRequest, LedgerID: req.LedgerID}, cost, time.Now())
				continue
			}
			c.release(cost)
			c.s.metrics.malformed.Inc()
			c.log.Warn("malformed request; closing the connection", "err", err)
			c.close("malformed request")
			return
		}
		c.s.dispatch(c, req, cost)
	}
}

// readFailed closes the connection after a read error, logging why at the right level.
func (c *serverConn) readFailed(err error) {
	c.mu.Lock()
	draining, closing := c.draining, c.closing
	c.mu.Unlock()
	switch {
	case closing:
	case draining && errors.Is(err, os.ErrDeadlineExceeded):
		return // Shutdown stopped reading on purpose; it closes the connection when drained
	case errors.Is(err, bookieproto.ErrMalformed), errors.Is(err, bookieproto.ErrFrameTooLarge):
		c.s.metrics.malformed.Inc()
		c.log.Warn("malformed frame; closing the connection", "err", err)
	case errors.Is(err, io.EOF):
		c.log.Debug("client closed the connection")
	default:
		c.log.Info("connection read failed; closing it", "err", err)
	}
	c.close("read: " + err.Error())
}

// acquire reserves cost for one request, waiting while the budget is spent. It always
// admits a request when none is in flight, so a frame of the maximum size can pass.
func (c *serverConn) acquire(cost int64) bool {
	maxReqs, maxBytes := c.s.cfg.MaxInFlightRequestsPerConnection, c.s.cfg.MaxInFlightBytesPerConnection
	c.mu.Lock()
	defer c.mu.Unlock()
	for !c.closing && c.reqs > 0 && (c.reqs >= maxReqs || c.bytes+cost > maxBytes) {
		c.readable.Wait()
	}
	if c.closing {
		return false
	}
	c.reqs++
	c.bytes += cost
	return true
}

func (c *serverConn) release(cost int64) {
	c.mu.Lock()
	c.reqs--
	c.bytes -= cost
	c.readable.Signal()
	c.mu.Unlock()
}

// respond queues resp for the write loop; the request's cost stays reserved until the
// response is written. The payload is charged too, so large reads also slow the reader.
func (c *serverConn) respond(resp bookieproto.Response, cost int64, start time.Time) {
	c.s.metrics.observe(resp.Op, resp.Status, time.Since(start))
	extra := int64(len(resp.Payload))
	for _, e := range resp.Entries {
		extra += int64(len(e.Payload))
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closing {
		c.reqs--
		c.bytes -= cost
		return
	}
	c.bytes += extra
	c.out = append(c.out, queued{resp: resp, cost: cost + extra})
	c.writable.Signal()
}

func (c *serverConn) writeLoop() {
	bw := bufio.NewWriterSize(c.nc, 64<<10)
	var batch []queued
	var scratch []byte
	for {
		c.mu.Lock()
		for len(c.out) == 0 && !c.closing {
			if bw.Buffered() > 0 {
				c.mu.Unlock()
				err := bw.Flush()
				c.mu.Lock()
				if err != nil {
					c.mu.Unlock()
					c.writeFailed(err)
					return
				}
				continue
			}
			c.flushed = true
			c.writable.Wait()
		}
		if c.closing {
			c.mu.Unlock()
			return
		}
		c.flushed = false
		batch, c.out = c.out, batch[:0]
		c.mu.Unlock()
		var freed int64
		for i := range batch {
			var err error
			scratch, err = bookieproto.WriteResponse(bw, scratch, &batch[i].resp)
			freed += batch[i].cost
			batch[i] = queued{}
			if err != nil {
				c.writeFailed(err)
				return
			}
		}
		if cap(scratch) > 1<<20 {
			scratch = nil // do not pin one large read's buffer for the connection's life
		}
		c.mu.Lock()
		c.reqs -= len(batch)
		c.bytes -= freed
		c.readable.Signal()
		c.mu.Unlock()
	}
}

func (c *serverConn) writeFailed(err error) {
	c.mu.Lock()
	closing := c.closing
	c.mu.Unlock()
	if !closing {
		c.log.Info("connection write failed; closing it", "err", err)
	}
	c.close("write: " + err.Error())
}

// close closes the connection once; pending handler results are dropped.
func (c *serverConn) close(reason string) {
	c.mu.Lock()
	if c.closing {
		c.mu.Unlock()
		return
	}
	c.closing = true
	c.out = nil
	c.readable.Broadcast()
	c.writable.Broadcast()
	c.mu.Unlock()
	c.cancel()
	_ = c.nc.Close()
	c.log.Debug("connection closed", "reason", reason)
}

// drain stops reading new requests (Shutdown); requests already read are still answered.
func (c *serverConn) drain() {
	c.mu.Lock()
	c.draining = true
	c.mu.Unlock()
	_ = c.nc.SetReadDeadline(time.Now())
}

// drained reports whether every request read has been answered and written out.
func (c *serverConn) drained() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.closing || (c.reqs == 0 && len(c.out) == 0 && c.flushed)
}
