package proxy

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/magnetar-io/magnetar/internal/wire"
	"github.com/magnetar-io/magnetar/internal/wire/pb"
)

// ServerVersion is what the proxy answers in CONNECTED on connections it serves itself.
const ServerVersion = "Magnetar Proxy"

// maxLookupHops bounds the Redirect answers followed for one lookup (the Go client's own
// limit is 20).
const maxLookupHops = 20

// clientBufferBytes is the read buffer of a client connection before it is spliced.
const clientBufferBytes = 16 << 10

// serveConn runs one client connection: the CONNECT decides whether the proxy serves it
// itself (lookups) or splices it to the broker named in proxy_to_broker_url.
func (p *Proxy) serveConn(nc net.Conn) {
	logger := p.logger.With("remote", nc.RemoteAddr().String())
	br := bufio.NewReaderSize(nc, clientBufferBytes)
	// A client sends CONNECT first and at once; a silent one must not hold a slot.
	_ = nc.SetReadDeadline(time.Now().Add(p.cfg.KeepAliveInterval()))
	f, err := readOneFrame(br, p.cfg.MaxFrameSizeBytes)
	if err != nil {
		logger.Debug("closing client connection: no valid CONNECT", "err", err)
		if errors.Is(err, wire.ErrMalformed) || errors.Is(err, wire.ErrFrameTooLarge) {
			sendConnError(nc, pb.ServerError_UnknownError, "proxy: malformed frame: "+err.Error())
		}
		return
	}
	if f.Cmd.GetType() != pb.BaseCommand_CONNECT {
		logger.Debug("closing client connection: first command is not CONNECT", "type", f.Cmd.GetType())
		sendConnError(nc, pb.ServerError_NotAllowedError, fmt.Sprintf("proxy: expected CONNECT, got %s", f.Cmd.GetType()))
		return
	}
	_ = nc.SetReadDeadline(time.Time{})
	connect := f.Cmd.GetConnect()
	if connect.GetProxyToBrokerUrl() != "" {
		p.splice(nc, br, connect, logger)
		return
	}
	c := &clientConn{p: p, nc: nc, logger: logger}
	c.ctx, c.cancel = context.WithCancel(p.ctx)
	defer func() {
		c.cancel()
		c.inflight.Wait()
	}()
	c.serve(br, connect)
}

// sendConnError answers a connection-level ERROR (request id -1), best effort, before the
// caller closes the connection: the Go client shows its message.
func sendConnError(nc net.Conn, code pb.ServerError, msg string) {
	_ = nc.SetWriteDeadline(time.Now().Add(5 * time.Second))
	_ = writeCommand(nc, &pb.BaseCommand{Type: pb.BaseCommand_ERROR.Enum(), Error: &pb.CommandError{
		RequestId: proto.Uint64(wire.NoRequestID), Error: code.Enum(), Message: proto.String(msg)}})
}

// clientConn is a client connection the proxy serves itself: lookups and the other
// requests a client may send to any broker. Requests run concurrently (each waits on a
// broker); writes are serialised.
type clientConn struct {
	p      *Proxy
	nc     net.Conn
	logger *slog.Logger

	ctx      context.Context
	cancel   context.CancelFunc
	inflight sync.WaitGroup
	running  atomic.Int64 // requests in flight (proxyMaxLookupRequestsPerConnection)
	wmu      sync.Mutex
}

func (c *clientConn) send(cmd *pb.BaseCommand) {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	_ = c.nc.SetWriteDeadline(time.Now().Add(c.p.cfg.KeepAliveInterval()))
	if err := writeCommand(c.nc, cmd); err != nil {
		c.logger.Debug("write to client failed; closing", "err", err)
		_ = c.nc.Close()
	}
}

// sendError answers request rid with an ERROR frame classifying err.
func (c *clientConn) sendError(rid uint64, err error) {
	code := pb.ServerError_UnknownError
	switch {
	case errors.Is(err, ErrBrokerUnavailable), errors.Is(err, ErrNoBroker), errors.Is(err, context.DeadlineExceeded):
		code = pb.ServerError_ServiceNotReady
	case errors.Is(err, ErrTooManyRequests):
		code = pb.ServerError_TooManyRequests
	case errors.Is(err, ErrUnsupported):
		code = pb.ServerError_NotAllowedError
	case errors.Is(err, ErrTooManyRedirects):
		code = pb.ServerError_MetadataError
	}
	c.send(&pb.BaseCommand{Type: pb.BaseCommand_ERROR.Enum(), Error: &pb.CommandError{
		RequestId: proto.Uint64(rid), Error: code.Enum(), Message: proto.String(err.Error())}})
}

func (c *clientConn) serve(br *bufio.Reader, connect *pb.CommandConnect) {
	c.send(&pb.BaseCommand{Type: pb.BaseCommand_CONNECTED.Enum(), Connected: &pb.CommandConnected{
		ServerVersion:   proto.String(ServerVersion),
		ProtocolVersion: proto.Int32(min(connect.GetProtocolVersion(), protocolVersion)),
		MaxMessageSize:  proto.Int32(wire.DefaultMaxMessageSize),
	}})
	r := wire.NewReader(br, c.p.cfg.MaxFrameSizeBytes)
	idle := 2 * c.p.cfg.KeepAliveInterval()
	for {
		// The Go client pings every keep-alive interval; twice that in silence is a dead peer.
		_ = c.nc.SetReadDeadline(time.Now().Add(idle))
		f, err := r.ReadFrame()
		if err != nil {
			if errors.Is(err, wire.ErrMalformed) || errors.Is(err, wire.ErrFrameTooLarge) {
				c.logger.Warn("closing client connection: bad frame", "err", err)
			} else {
				c.logger.Debug("client connection ended", "err", err)
			}
			return
		}
		cmd := f.Cmd // owns its memory: safe to hand to a goroutine
		switch cmd.GetType() {
		case pb.BaseCommand_PING:
			c.send(&pb.BaseCommand{Type: pb.BaseCommand_PONG.Enum(), Pong: &pb.CommandPong{}})
		case pb.BaseCommand_PONG:
		case pb.BaseCommand_LOOKUP:
			c.async(cmd, c.handleLookup)
		case pb.BaseCommand_PARTITIONED_METADATA, pb.BaseCommand_GET_TOPICS_OF_NAMESPACE, pb.BaseCommand_GET_SCHEMA:
			c.async(cmd, c.forward)
		default:
			rid, ok := RequestID(cmd)
			if !ok {
				rid = wire.NoRequestID
			}
			c.sendError(rid, fmt.Errorf("%w: %s; the client must look the topic up and connect through the proxy to the broker it names", ErrUnsupported, cmd.GetType()))
		}
	}
}

// async runs handle(cmd) in its own goroutine, or answers TooManyRequests at once when the
// connection already has its limit of requests in flight.
func (c *clientConn) async(cmd *pb.BaseCommand, handle func(*pb.BaseCommand)) {
	if c.running.Add(1) > int64(c.p.cfg.MaxLookupRequestsPerConnection) {
		c.running.Add(-1)
		rid, _ := RequestID(cmd)
		c.sendError(rid, fmt.Errorf("%w: %d in flight on this connection (proxyMaxLookupRequestsPerConnection)", ErrTooManyRequests, c.p.cfg.MaxLookupRequestsPerConnection))
		return
	}
	c.inflight.Add(1)
	go func() {
		defer c.inflight.Done()
		defer c.running.Add(-1)
		handle(cmd)
	}()
}

// handleLookup answers a LOOKUP: the proxy finds the owner itself (following Redirects)
// and tells the client to reach it through the proxy (proxy_through_service_url).
func (c *clientConn) handleLookup(cmd *pb.BaseCommand) {
	rid := cmd.GetLookupTopic().GetRequestId()
	ctx, cancel := context.WithTimeout(c.ctx, c.p.cfg.ReadTimeout())
	defer cancel()
	resp, err := c.p.lookup(ctx, cmd)
	if err != nil {
		c.p.metrics.lookupFails.Inc()
		c.logger.Debug("lookup failed", "topic", cmd.GetLookupTopic().GetTopic(), "err", err)
		c.sendError(rid, err)
		return
	}
	setRequestID(resp, rid)
	c.send(resp)
}

// forward sends a request any broker can answer and relays the answer.
func (c *clientConn) forward(cmd *pb.BaseCommand) {
	rid, _ := RequestID(cmd)
	ctx, cancel := context.WithTimeout(c.ctx, c.p.cfg.ReadTimeout())
	defer cancel()
	resp, _, err := c.p.askAny(ctx, cmd)
	if err != nil {
		c.sendError(rid, err)
		return
	}
	setRequestID(resp, rid)
	c.send(resp)
}

// askAny sends cmd to the first broker that answers, trying the known brokers in turn
// when one cannot be reached. It returns the answer and the broker's address.
func (p *Proxy) askAny(ctx context.Context, cmd *pb.BaseCommand) (*pb.BaseCommand, string, error) {
	cands := p.brokers.candidates()
	var lastErr error = ErrNoBroker
	for _, b := range cands {
		if b.ServiceAddr == "" {
			continue
		}
		resp, err := p.pool.request(ctx, b.ServiceAddr, cmd)
		if err == nil {
			return resp, b.ServiceAddr, nil
		}
		lastErr = err
		if !errors.Is(err, ErrBrokerUnavailable) || ctx.Err() != nil {
			break
		}
	}
	return nil, "", lastErr
}

// lookup finds the broker serving the topic of a LOOKUP command and returns the answer for
// the client: Connect to the owner with proxy_through_service_url, or the broker's Failed
// answer or ERROR as it came.
func (p *Proxy) lookup(ctx context.Context, cmd *pb.BaseCommand) (*pb.BaseCommand, error) {
	p.metrics.lookups.Inc()
	q := proto.Clone(cmd).(*pb.BaseCommand)
	q.LookupTopic.Authoritative = proto.Bool(false)
	resp, addr, err := p.askAny(ctx, q)
	for hop := 0; ; hop++ {
		if err != nil {
			return nil, err
		}
		lr := resp.GetLookupTopicResponse()
		if resp.GetType() != pb.BaseCommand_LOOKUP_RESPONSE || lr == nil {
			return resp, nil // ERROR from the broker: relayed as it is
		}
		switch lr.GetResponse() {
		case pb.CommandLookupTopicResponse_Connect:
			target, err := HostPort(lr.GetBrokerServiceUrl(), "pulsar")
			if err != nil {
				return nil, fmt.Errorf("%w: broker %s answered an unusable URL: %v", ErrBrokerUnavailable, addr, err)
			}
			p.brokers.vouch(target)
			lr.Authoritative = proto.Bool(true)
			lr.ProxyThroughServiceUrl = proto.Bool(true)
			return resp, nil
		case pb.CommandLookupTopicResponse_Redirect:
			if hop >= maxLookupHops {
				return nil, fmt.Errorf("%w: lookup of %s after %d hops", ErrTooManyRedirects, cmd.GetLookupTopic().GetTopic(), hop)
			}
			target, herr := HostPort(lr.GetBrokerServiceUrl(), "pulsar")
			if herr != nil {
				return nil, fmt.Errorf("%w: broker %s redirected to an unusable URL: %v", ErrBrokerUnavailable, addr, herr)
			}
			// A broker we trust named it: the client may be spliced to it later.
			p.brokers.vouch(target)
			q.LookupTopic.Authoritative = proto.Bool(lr.GetAuthoritative())
			addr = target
			resp, err = p.pool.request(ctx, target, q)
		default:
			return resp, nil // Failed: relayed with the broker's error and message
		}
	}
}
