package kafka

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/magnetar-io/magnetar/internal/auth"
	"github.com/magnetar-io/magnetar/internal/framebuf"
)

// conn is one client connection. The read loop decodes requests and starts their handlers
// in arrival order; the write loop sends responses in the same order, waiting for each in
// turn, so handlers that finish later (Produce waiting for storage, a Fetch long poll, a
// JoinGroup waiting for a rebalance) never reorder responses and never block reading the
// next request. At most kafkaMaxInflightRequests are in progress; then reading pauses and
// TCP pushes back on the client.
//
// A request that cannot be decoded, or names an API or version we do not support, closes
// this connection only, with the reason logged (ApiVersions is the exception: a too-new
// version gets UNSUPPORTED_VERSION, KIP-511).
type conn struct {
	s      *Server
	nc     net.Conn
	log    *slog.Logger
	ctx    context.Context
	cancel context.CancelFunc
	host   string // client host, for DescribeGroups
	// clientID is the client.id of the connection's requests (clients send the same one
	// on every request of a connection); set by the read loop before a handler starts.
	clientID string
	// SASL state, touched only by the read loop's handlers (sasl.go).
	saslMech      string
	scram         *scramServer // a SCRAM exchange between its two round trips
	authenticated bool
	principal     auth.Principal
	authzMu       sync.Mutex
	authzCache    map[authzKey]authzDecision

	// throttleUntil (unix ns) mutes the connection: the read loop reads no request
	// before it (a client over its quota, quota_enforce.go).
	throttleUntil atomic.Int64

	queue chan *inflight
	wg    sync.WaitGroup // the write loop
}

// inflight is one request between decode and response.
type inflight struct {
	hdr   requestHeader
	start time.Time
	done  chan struct{}
	resp  kmsg.Response // nil: no response (acks=0)
	once  sync.Once
}

func (p *inflight) complete(r kmsg.Response) {
	p.once.Do(func() {
		p.resp = r
		close(p.done)
	})
}

func newConn(s *Server, nc net.Conn) *conn {
	ctx, cancel := context.WithCancel(s.ctx)
	host, _, _ := net.SplitHostPort(nc.RemoteAddr().String())
	return &conn{
		s: s, nc: nc, ctx: ctx, cancel: cancel, host: host,
		log:   s.log.With("remote", nc.RemoteAddr().String()),
		queue: make(chan *inflight, s.cfg.MaxInflightRequests),
	}
}

// serve runs the connection until the client goes away, a request is malformed or the
// server closes.
func (c *conn) serve() {
	c.wg.Add(1)
	go c.writeLoop()
	err := c.readLoop()
	switch {
	case err == nil, errors.Is(err, io.EOF), errors.Is(err, net.ErrClosed), c.ctx.Err() != nil:
		c.log.Debug("kafka connection closed", "err", err)
	default:
		c.s.metrics.malformed.Inc()
		c.log.Warn("kafka connection closed: bad request", "err", err)
	}
	c.cancel()
	close(c.queue)
	c.wg.Wait()
	_ = c.nc.Close()
}

func (c *conn) readLoop() error {
	br := bufio.NewReaderSize(c.nc, 64<<10)
	for {
		if err := c.waitThrottle(); err != nil {
			return err
		}
		body, err := readRequest(br, c.s.cfg.MaxRequestSize)
		if err != nil {
			return err
		}
		if err := c.dispatch(body); err != nil {
			return err
		}
	}
}

// readRequest reads one size-prefixed request into a fresh buffer the caller owns (decoded
// requests alias it). io.EOF means a clean end between requests.
func readRequest(br *bufio.Reader, maxSize int) ([]byte, error) {
	head, err := br.Peek(4)
	if err != nil {
		if errors.Is(err, io.EOF) && len(head) > 0 {
			err = io.ErrUnexpectedEOF
		}
		return nil, err
	}
	size := int32(binary.BigEndian.Uint32(head))
	_, _ = br.Discard(4)
	if size < 0 || int(size) > maxSize {
		return nil, fmt.Errorf("request size %d outside 0..%d (kafkaMaxRequestSize)", size, maxSize)
	}
	// The buffer grows as the bytes arrive: a client that declares a 100 MiB request and
	// stalls holds what it sent, not the declared size.
	body, err := framebuf.ReadFull(br, int(size))
	if err != nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return nil, fmt.Errorf("request of %d bytes cut short: %w", size, err)
	}
	return body, nil
}

// dispatch decodes one request and starts its handler.
func (c *conn) dispatch(body []byte) error {
	h, rest, err := parseHeader(body)
	if err != nil {
		return err
	}
	a, ok := apis[h.key]
	if !ok {
		return fmt.Errorf("unsupported API key %d (%s)", h.key, kmsg.NameForKey(h.key))
	}
	p := &inflight{hdr: h, start: time.Now(), done: make(chan struct{})}
	if h.key == kmsg.ApiVersions.Int16() && h.version > a.max {
		// The body is in a version we cannot read; answer in v0, which every client reads.
		resp := &kmsg.ApiVersionsResponse{Version: 0, ErrorCode: kerr.UnsupportedVersion.Code}
		handleApiVersions(c, &kmsg.ApiVersionsRequest{}, func(r kmsg.Response) {
			resp.ApiKeys = r.(*kmsg.ApiVersionsResponse).ApiKeys
		})
		p.hdr.version = 0
		c.enqueue(p)
		p.complete(resp)
		return nil
	}
	if c.s.auth.Enabled() && !c.authenticated && !saslOpen[h.key] {
		return fmt.Errorf("%s before SASL authentication (the listener requires it)", kmsg.NameForKey(h.key))
	}
	if h.version < a.min || h.version > a.max {
		return fmt.Errorf("%s v%d is not supported (v%d-v%d are; ApiVersions lists them)", kmsg.NameForKey(h.key), h.version, a.min, a.max)
	}
	req := kmsg.RequestForKey(h.key)
	req.SetVersion(h.version)
	if req.IsFlexible() {
		if rest, err = skipHeaderTags(rest); err != nil {
			return fmt.Errorf("%s v%d: %w", kmsg.NameForKey(h.key), h.version, err)
		}
	}
	if err := req.ReadFrom(rest); err != nil {
		return fmt.Errorf("%s v%d: decoding: %w", kmsg.NameForKey(h.key), h.version, err)
	}
	c.clientID = h.clientID
	c.enqueue(p)
	a.handle(c, req, func(r kmsg.Response) {
		if r != nil {
			r.SetVersion(h.version)
		}
		p.complete(r)
	})
	return nil
}

func (c *conn) enqueue(p *inflight) {
	c.queue <- p
}

// writeLoop sends responses in request order, flushing when no further response is ready.
func (c *conn) writeLoop() {
	defer c.wg.Done()
	bw := bufio.NewWriterSize(c.nc, 64<<10)
	var buf []byte
	var closing time.Time
	broken := false
	for p := range c.queue {
		if !isDone(p) && !broken && bw.Buffered() > 0 {
			// Send what is ready before waiting for a slow response.
			if err := bw.Flush(); err != nil {
				broken = true
			}
		}
		select {
		case <-p.done:
		case <-c.ctx.Done():
			// Closing: handlers still waiting (a long poll, a join) get one second in all,
			// not one each, then the rest are dropped.
			if closing.IsZero() {
				closing = time.Now().Add(time.Second)
			}
			select {
			case <-p.done:
			case <-time.After(time.Until(closing)):
			}
		}
		c.s.metrics.observe(p.hdr.key, time.Since(p.start))
		if p.resp == nil || broken {
			continue
		}
		flexible := p.resp.IsFlexible() && p.hdr.key != kmsg.ApiVersions.Int16()
		buf = appendResponseHeader(buf[:0], p.hdr.correlationID, flexible)
		buf = p.resp.AppendTo(buf)
		buf = finishFrame(buf, 0)
		if _, err := bw.Write(buf); err != nil {
			broken = true
			c.cancel()
			_ = c.nc.Close()
		}
		if cap(buf) > 1<<20 {
			buf = nil // do not keep a large fetch's buffer for the connection's life
		}
		if len(c.queue) == 0 && !broken {
			if err := bw.Flush(); err != nil {
				broken = true
			}
		}
	}
	if !broken {
		_ = bw.Flush()
	}
}

func isDone(p *inflight) bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}
