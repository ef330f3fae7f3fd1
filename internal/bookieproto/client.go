package bookieproto

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"time"
)

// ClientOptions configures NewClient. Zero fields take the defaults named on each.
type ClientOptions struct {
	// Logger receives connection events (component "bookie-client"); nil discards them.
	Logger *slog.Logger
	// DialTimeout bounds connecting to a bookie (default 5s).
	DialTimeout time.Duration
	// RequestTimeout bounds every request from the call until its response, on top of the
	// long-poll time of WaitLAC (default 10s, BookKeeper's addEntryTimeoutSec is 5).
	RequestTimeout time.Duration
	// MaxFrameSize bounds the frames the client sends and accepts (default DefaultMaxFrameSize);
	// it must match the bookies' nettyMaxFrameSizeBytes.
	MaxFrameSize int
	// MaxPendingRequests bounds the requests queued or in flight on one connection; past it
	// calls fail at once with ErrTooBusy instead of growing memory (default 100,000).
	MaxPendingRequests int
	// WriteBufferSize is the per-connection write buffer; requests are copied into it and
	// written with one syscall per buffer or per drained queue (default 64 KiB).
	WriteBufferSize int
	// Local maps bookie addresses to bookies in this process: calls for them go to the
	// Handler directly, with no socket, frame encoding or response copy (a standalone's
	// broker and its own bookie). Calls for other addresses use the network as usual.
	Local map[string]Handler
	// TLS, when set, makes every connection TLS (the bookies' tlsProviderFactoryClass); the
	// handshake, with the certificate checks of this config, completes before any request
	// is written. ServerName is set per bookie from its address.
	TLS *tls.Config
}

func (o *ClientOptions) fill() {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.DialTimeout <= 0 {
		o.DialTimeout = 5 * time.Second
	}
	if o.RequestTimeout <= 0 {
		o.RequestTimeout = 10 * time.Second
	}
	if o.MaxFrameSize <= 0 {
		o.MaxFrameSize = DefaultMaxFrameSize
	}
	o.MaxFrameSize = max(o.MaxFrameSize, MinFrameSize)
	if o.MaxPendingRequests <= 0 {
		o.MaxPendingRequests = 100_000
	}
	if o.WriteBufferSize <= 0 {
		o.WriteBufferSize = 64 << 10
	}
}

// NewClient returns a Client with one lazily dialled, pipelined connection per bookie address.
func NewClient(opts ClientOptions) Client {
	opts.fill()
	return &client{opts: opts, log: opts.Logger.With("component", "bookie-client"), conns: map[string]*clientConn{}}
}

// client is the Client implementation. Design:
//
//   - One clientConn per address, created on first use and replaced after it fails
//     (reconnect is lazy: the next call dials again). Calls for an address enqueue under the
//     connection's lock, so they are sent in call order.
//   - A writer goroutine per connection drains the whole queue into a bufio.Writer and
//     flushes only when the queue is empty: when busy, many requests share one write(2).
//   - A reader goroutine decodes responses and completes the call registered under the
//     response's request id. Completion happens exactly once, by whoever removes the call from
//     the pending map (reader, timeout sweeper, a giving-up caller or the failure path).
//   - A sweeper fails calls past their deadline or whose context ended; a request that timed
//     out stays sent, so the bookie may still apply it (the ledger layer treats a timeout as
//     "unknown", never as "not written").
//   - When the connection fails, every pending and queued call fails with ErrUnavailable.
type client struct {
	opts ClientOptions
	log  *slog.Logger

	mu     sync.Mutex
	conns  map[string]*clientConn
	closed bool
}

// call is one request waiting for its response.
type call struct {
	req      Request
	ctx      context.Context
	deadline time.Time
	// ctxDeadline: deadline is the context's own, so passing it means the context
	// expired even if its timer has not fired yet when the sweeper looks.
	ctxDeadline bool
	complete    func(Response, error) // called once, never under a lock
}

type clientConn struct {
	c    *client
	addr string
	log  *slog.Logger

	mu      sync.Mutex
	nextID  uint64
	queue   []*call
	pending map[uint64]*call
	err     error         // set once when the connection fails or closes
	wake    chan struct{} // cap 1: the queue became non-empty
	done    chan struct{} // closed when err is set
}

func (c *client) conn(addr string) (*clientConn, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil, fmt.Errorf("%w: client closed", ErrUnavailable)
	}
	if cc := c.conns[addr]; cc != nil {
		return cc, nil
	}
	cc := &clientConn{
		c: c, addr: addr, log: c.log.With("bookie", addr),
		pending: map[uint64]*call{}, wake: make(chan struct{}, 1), done: make(chan struct{}),
	}
	c.conns[addr] = cc
	go cc.run()
	return cc, nil
}

// forget drops cc from the map if it is still the current connection for its address.
func (c *client) forget(cc *clientConn) {
	c.mu.Lock()
	if c.conns[cc.addr] == cc {
		delete(c.conns, cc.addr)
	}
	c.mu.Unlock()
}

// Close closes every connection; pending calls fail with ErrUnavailable.
func (c *client) Close() error {
	c.mu.Lock()
	c.closed = true
	conns := c.conns
	c.conns = map[string]*clientConn{}
	c.mu.Unlock()
	for _, cc := range conns {
		cc.fail(fmt.Errorf("%w: client closed", ErrUnavailable))
	}
	return nil
}

// send validates and enqueues req for addr; complete runs exactly once.
func (c *client) send(ctx context.Context, addr string, req Request, extra time.Duration, complete func(Response, error)) {
	if err := ctx.Err(); err != nil {
		complete(Response{}, ctxErr(err))
		return
	}
	if n := RequestSize(&req); n-lengthSize > c.opts.MaxFrameSize {
		complete(Response{}, fmt.Errorf("%w: request of %d bytes exceeds the %d-byte frame limit", ErrBadRequest, n, c.opts.MaxFrameSize))
		return
	}
	if len(req.MasterKey) > MaxMasterKeySize {
		complete(Response{}, fmt.Errorf("%w: master key of %d bytes, limit %d", ErrBadRequest, len(req.MasterKey), MaxMasterKeySize))
		return
	}
	if h := c.opts.Local[addr]; h != nil {
		sendLocal(ctx, h, req, complete)
		return
	}
	deadline := time.Now().Add(c.opts.RequestTimeout + extra)
	fromCtx := false
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline, fromCtx = d, true
	}
	cl := &call{req: req, ctx: ctx, deadline: deadline, ctxDeadline: fromCtx, complete: complete}
	var cc *clientConn
	for {
		var err error
		if cc, err = c.conn(addr); err != nil {
			complete(Response{}, err)
			return
		}
		cc.mu.Lock()
		if cc.err == nil {
			break
		}
		// The connection failed and is about to leave the map: drop it and dial afresh
		// rather than failing a call that was never sent.
		cc.mu.Unlock()
		c.forget(cc)
	}
	if len(cc.pending) >= c.opts.MaxPendingRequests {
		cc.mu.Unlock()
		complete(Response{}, fmt.Errorf("%w: %d requests pending to %s (client limit)", ErrTooBusy, c.opts.MaxPendingRequests, addr))
		return
	}
	cc.nextID++
	cl.req.RequestID = cc.nextID
	cc.pending[cl.req.RequestID] = cl
	cc.queue = append(cc.queue, cl)
	cc.mu.Unlock()
	select {
	case cc.wake <- struct{}{}:
	default:
	}
}

func ctxErr(err error) error {
	if errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("%w: %w", ErrTimeout, err)
	}
	return err
}

// take removes the call with id from pending; nil if it was already completed.
func (cc *clientConn) take(id uint64) *call {
	cc.mu.Lock()
	cl := cc.pending[id]
	delete(cc.pending, id)
	cc.mu.Unlock()
	return cl
}

// fail closes the connection once and fails every pending call with err.
func (cc *clientConn) fail(err error) {
	cc.mu.Lock()
	if cc.err != nil {
		cc.mu.Unlock()
		return
	}
	cc.err = err
	calls := cc.pending
	cc.pending = map[uint64]*call{}
	cc.queue = nil
	close(cc.done)
	cc.mu.Unlock()
	cc.c.forget(cc)
	for _, cl := range calls {
		cl.complete(Response{}, err)
	}
}

// run dials, then runs the reader and sweeper beside the writer loop.
func (cc *clientConn) run() {
	d := net.Dialer{Timeout: cc.c.opts.DialTimeout}
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		select {
		case <-cc.done:
			cancel()
		case <-ctx.Done():
		}
	}()
	nc, err := d.DialContext(ctx, "tcp", cc.addr)
	if err != nil {
		cancel()
		cc.log.Debug("dial failed; pending requests fail", "err", err)
		cc.fail(fmt.Errorf("%w: dial %s: %w", ErrUnavailable, cc.addr, err))
		return
	}
	defer cancel()
	if tc, ok := nc.(*net.TCPConn); ok {
		_ = tc.SetNoDelay(true)
	}
	if cfg := cc.c.opts.TLS; cfg != nil {
		if nc, err = cc.handshake(ctx, nc, cfg); err != nil {
			cc.fail(fmt.Errorf("%w: TLS with %s: %w", ErrUnavailable, cc.addr, err))
			return
		}
	}
	go func() {
		<-cc.done
		_ = nc.Close()
	}()
	go cc.readLoop(nc)
	go cc.sweep()
	cc.writeLoop(nc)
}

// handshake runs the TLS handshake over a dialled connection within the dial timeout.
func (cc *clientConn) handshake(ctx context.Context, nc net.Conn, cfg *tls.Config) (net.Conn, error) {
	c := cfg.Clone()
	if c.ServerName == "" {
		if host, _, err := net.SplitHostPort(cc.addr); err == nil {
			c.ServerName = host
		}
	}
	tc := tls.Client(nc, c)
	hctx, cancel := context.WithTimeout(ctx, cc.c.opts.DialTimeout)
	defer cancel()
	if err := tc.HandshakeContext(hctx); err != nil {
		_ = nc.Close()
		return nil, err
	}
	return tc, nil
}

func (cc *clientConn) writeLoop(nc net.Conn) {
	bw := bufio.NewWriterSize(nc, cc.c.opts.WriteBufferSize)
	var batch []*call
	var scratch []byte
	for {
		cc.mu.Lock()
		batch, cc.queue = cc.queue, batch[:0]
		failed := cc.err != nil
		cc.mu.Unlock()
		if failed {
			return
		}
		if len(batch) == 0 {
			// The queue drained: push out what is buffered, then sleep until more arrives.
			if bw.Buffered() > 0 {
				if err := bw.Flush(); err != nil {
					cc.fail(fmt.Errorf("%w: write to %s: %w", ErrUnavailable, cc.addr, err))
					return
				}
			}
			select {
			case <-cc.wake:
			case <-cc.done:
				return
			}
			continue
		}
		for i, cl := range batch {
			// The head goes through scratch, the payload straight to bw: one copy of each
			// added entry instead of two (bufio writes a large payload directly).
			scratch = AppendRequestHead(scratch[:0], &cl.req)
			batch[i] = nil
			_, err := bw.Write(scratch)
			if err == nil && cl.req.Op == OpAddEntry {
				_, err = bw.Write(cl.req.Payload)
			}
			if err != nil {
				cc.fail(fmt.Errorf("%w: write to %s: %w", ErrUnavailable, cc.addr, err))
				return
			}
		}
		if cap(scratch) > 1<<20 {
			scratch = nil // do not pin one large add's buffer for the connection's life
		}
	}
}

func (cc *clientConn) readLoop(nc net.Conn) {
	br := bufio.NewReaderSize(nc, 64<<10)
	for {
		frame, err := ReadFrame(br, cc.c.opts.MaxFrameSize)
		if err != nil {
			cc.fail(fmt.Errorf("%w: read from %s: %w", ErrUnavailable, cc.addr, err))
			return
		}
		resp, err := DecodeResponse(frame)
		if err != nil {
			cc.log.Warn("malformed response; closing the connection", "err", err)
			cc.fail(fmt.Errorf("%w: bad response from %s: %w", ErrUnavailable, cc.addr, err))
			return
		}
		cl := cc.take(resp.RequestID)
		if cl == nil {
			continue // timed out or abandoned by its caller
		}
		if resp.Op != cl.req.Op {
			err := fmt.Errorf("%w: response op %v for a %v request", ErrMalformed, resp.Op, cl.req.Op)
			cl.complete(Response{}, fmt.Errorf("%w: %w", ErrUnavailable, err))
			cc.log.Warn("mismatched response; closing the connection", "err", err)
			cc.fail(fmt.Errorf("%w: bad response from %s: %w", ErrUnavailable, cc.addr, err))
			return
		}
		cl.complete(resp, nil)
	}
}

// sweepInterval is how often deadlines and contexts of pending calls are checked.
const sweepInterval = 50 * time.Millisecond

func (cc *clientConn) sweep() {
	t := time.NewTicker(sweepInterval)
	defer t.Stop()
	var expired []*call
	for {
		select {
		case <-cc.done:
			return
		case now := <-t.C:
			cc.mu.Lock()
			for id, cl := range cc.pending {
				if now.After(cl.deadline) || cl.ctx.Err() != nil {
					delete(cc.pending, id)
					expired = append(expired, cl)
				}
			}
			cc.mu.Unlock()
			for i, cl := range expired {
				err := cl.ctx.Err()
				if err == nil && cl.ctxDeadline {
					err = context.DeadlineExceeded
				}
				if err == nil {
					err = fmt.Errorf("%w: %v to %s got no response in time", ErrTimeout, cl.req.Op, cc.addr)
				}
				cl.complete(Response{}, ctxErr(err))
				expired[i] = nil
			}
			expired = expired[:0]
		}
	}
}

// opError wraps a failed call with what it was.
func opError(op Op, addr string, ledgerID, entryID int64, err error) error {
	if entryID >= 0 {
		return fmt.Errorf("bookieproto: %v ledger %d entry %d on %s: %w", op, ledgerID, entryID, addr, err)
	}
	return fmt.Errorf("bookieproto: %v ledger %d on %s: %w", op, ledgerID, addr, err)
}

// AddEntry implements Client.
func (c *client) AddEntry(ctx context.Context, addr string, req AddRequest, done func(error)) {
	r := Request{Op: OpAddEntry, LedgerID: req.LedgerID, EntryID: req.EntryID, LAC: req.LAC, MasterKey: req.MasterKey, Prefix: req.Prefix, Payload: req.Payload}
	if req.Recovery {
		r.Flags |= FlagRecovery
	}
	c.send(ctx, addr, r, 0, func(resp Response, err error) {
		if err == nil {
			err = resp.Status.Err()
		}
		if err != nil {
			err = opError(OpAddEntry, addr, req.LedgerID, req.EntryID, err)
		}
		done(err)
	})
}

type result struct {
	resp Response
	err  error
}

// roundTrip sends req and waits for its response or ctx. A non-OK status is returned as the
// status's sentinel.
func (c *client) roundTrip(ctx context.Context, addr string, req Request, extra time.Duration) (Response, error) {
	ch := make(chan result, 1)
	c.send(ctx, addr, req, extra, func(resp Response, err error) { ch <- result{resp, err} })
	var res result
	select {
	case res = <-ch:
	case <-ctx.Done():
		// The sweeper would fail it too; returning now keeps cancellation prompt.
		res.err = ctxErr(ctx.Err())
	}
	if res.err == nil {
		res.err = res.resp.Status.Err()
	}
	if res.err != nil {
		entryID := int64(-1)
		if req.Op == OpReadEntry || req.Op == OpReadRange {
			entryID = req.EntryID
		}
		return res.resp, opError(req.Op, addr, req.LedgerID, entryID, res.err)
	}
	return res.resp, nil
}

// ReadEntry implements Client.
func (c *client) ReadEntry(ctx context.Context, addr string, req ReadRequest) (Entry, error) {
	r := Request{Op: OpReadEntry, LedgerID: req.LedgerID, EntryID: req.EntryID, MasterKey: req.MasterKey}
	if req.Fence {
		r.Flags |= FlagFence
	}
	resp, err := c.roundTrip(ctx, addr, r, 0)
	if err != nil {
		return Entry{}, err
	}
	return Entry{LedgerID: resp.LedgerID, EntryID: resp.EntryID, LAC: resp.LAC, Payload: resp.Payload}, nil
}

// ReadRange implements Client.
func (c *client) ReadRange(ctx context.Context, addr string, ledgerID, first, last int64, maxBytes int) ([]Entry, error) {
	if last < first {
		return nil, nil
	}
	mb := uint32(min(max(maxBytes, 0), c.opts.MaxFrameSize))
	resp, err := c.roundTrip(ctx, addr, Request{Op: OpReadRange, LedgerID: ledgerID, EntryID: first, LastID: last, MaxBytes: mb}, 0)
	if err != nil {
		return nil, err
	}
	return resp.Entries, nil
}

// ReadLAC implements Client.
func (c *client) ReadLAC(ctx context.Context, addr string, ledgerID int64, fence bool, masterKey []byte) (int64, error) {
	r := Request{Op: OpReadLAC, LedgerID: ledgerID, MasterKey: masterKey}
	if fence {
		r.Flags |= FlagFence
	}
	resp, err := c.roundTrip(ctx, addr, r, 0)
	if err != nil {
		return -1, err
	}
	return resp.LAC, nil
}

// WaitLAC implements Client. The bookie caps the wait at its maxLongPollTimeout.
func (c *client) WaitLAC(ctx context.Context, addr string, ledgerID, previous int64, timeout time.Duration) (int64, error) {
	ms := uint32(min(max(timeout.Milliseconds(), 0), 1<<31))
	resp, err := c.roundTrip(ctx, addr, Request{Op: OpWaitLAC, LedgerID: ledgerID, LAC: previous, TimeoutMs: ms}, timeout)
	if err != nil {
		return -1, err
	}
	return resp.LAC, nil
}

// DeleteLedger implements Client.
func (c *client) DeleteLedger(ctx context.Context, addr string, ledgerID int64) error {
	_, err := c.roundTrip(ctx, addr, Request{Op: OpDelete, LedgerID: ledgerID}, 0)
	return err
}
