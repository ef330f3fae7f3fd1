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

	"github.com/magnetar-io/magnetar/internal/auth"
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
	actx, acancel := context.WithTimeout(p.ctx, p.cfg.ReadTimeout())
	se, err := p.sec.authenticate(actx, nc, connect)
	acancel()
	if err != nil {
		sendConnError(nc, pb.ServerError_AuthenticationError, err.Error())
		return
	}
	if connect.GetProxyToBrokerUrl() != "" {
		p.splice(nc, br, connect, se, logger)
		return
	}
	c := &clientConn{p: p, nc: nc, logger: logger, se: se, pool: p.pool}
	if se != nil {
		// The client's lookups go over connections that name it to the brokers.
		c.pool = newPool(p.cfg.ConnectTimeout(), p.cfg.MaxFrameSizeBytes, p.pool.sem, logger, p.upstreamDialer(se, connect))
		defer c.pool.close()
	}
	c.ctx, c.cancel = context.WithCancel(p.ctx)
	defer func() {
		c.cancel()
		c.inflight.Wait()
	}()
	if se != nil {
		go c.refreshLoop(connect.GetProtocolVersion())
	}
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
	se     *auth.Session // nil with authentication off
	pool   *pool         // the proxy's, or the client's own when authenticated

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
		case pb.BaseCommand_AUTH_RESPONSE:
			if c.se == nil {
				continue
			}
			rctx, cancel := context.WithTimeout(c.ctx, c.p.cfg.ReadTimeout())
			r := cmd.GetAuthResponse().GetResponse()
			err := c.se.Respond(rctx, r.GetAuthMethodName(), r.GetAuthData())
			cancel()
			if err != nil {
				sendConnError(c.nc, pb.ServerError_AuthenticationError, err.Error())
				return
			}
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
	resp, err := c.p.lookup(ctx, c.pool, cmd)
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
	resp, _, err := c.p.askAny(ctx, c.pool, cmd)
	if err != nil {
		c.sendError(rid, err)
		return
	}
	setRequestID(resp, rid)
	c.send(resp)
}

// askAny sends cmd to the first broker that answers, trying the known brokers in turn
// when one cannot be reached. It returns the answer and the broker's address.
func (p *Proxy) askAny(ctx context.Context, pl *pool, cmd *pb.BaseCommand) (*pb.BaseCommand, string, error) {
	cands := p.brokers.candidates()
	var lastErr error = ErrNoBroker
	for _, b := range cands {
		addr := b.ServiceAddr
		if addr == "" || (p.sec.withTLS && b.ServiceAddrTLS != "") {
			addr = b.ServiceAddrTLS
		}
		if addr == "" {
			continue
		}
		resp, err := pl.request(ctx, addr, cmd)
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
func (p *Proxy) lookup(ctx context.Context, pl *pool, cmd *pb.BaseCommand) (*pb.BaseCommand, error) {
	p.metrics.lookups.Inc()
	q := proto.Clone(cmd).(*pb.BaseCommand)
	q.LookupTopic.Authoritative = proto.Bool(false)
	resp, addr, err := p.askAny(ctx, pl, q)
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
			if _, err := p.vouchAnswer(lr); err != nil {
				return nil, fmt.Errorf("%w: broker %s answered an unusable URL: %v", ErrBrokerUnavailable, addr, err)
			}
			lr.Authoritative = proto.Bool(true)
			lr.ProxyThroughServiceUrl = proto.Bool(true)
			return resp, nil
		case pb.CommandLookupTopicResponse_Redirect:
			if hop >= maxLookupHops {
				return nil, fmt.Errorf("%w: lookup of %s after %d hops", ErrTooManyRedirects, cmd.GetLookupTopic().GetTopic(), hop)
			}
			target, herr := p.vouchAnswer(lr)
			if herr != nil {
				return nil, fmt.Errorf("%w: broker %s redirected to an unusable URL: %v", ErrBrokerUnavailable, addr, herr)
			}
			q.LookupTopic.Authoritative = proto.Bool(lr.GetAuthoritative())
			addr = target
			resp, err = pl.request(ctx, target, q)
		default:
			return resp, nil // Failed: relayed with the broker's error and message
		}
	}
}

// vouchAnswer remembers the broker addresses a lookup answer names (a broker we trust named
// them: a client may be spliced to them later) and returns the one to ask next. A TLS client
// of the proxy picks brokerServiceUrlTls as its logical address, so an answer from a broker
// without TLS gets the plaintext address there too: the proxy maps it when splicing.
func (p *Proxy) vouchAnswer(lr *pb.CommandLookupTopicResponse) (string, error) {
	plain, errPlain := "", error(nil)
	if u := lr.GetBrokerServiceUrl(); u != "" {
		plain, errPlain = HostPort(u, "pulsar")
	}
	secure := ""
	if u := lr.GetBrokerServiceUrlTls(); u != "" {
		s, err := HostPort(u, "pulsar")
		if err != nil {
			return "", err
		}
		secure = s
		p.brokers.vouchAs(s, true)
	}
	if errPlain != nil {
		return "", errPlain
	}
	if plain != "" {
		p.brokers.vouch(plain)
	}
	switch {
	case plain == "" && secure == "":
		return "", fmt.Errorf("no broker URL in the answer")
	case secure == "":
		lr.BrokerServiceUrlTls = proto.String("pulsar+ssl://" + plain)
	case plain == "":
		lr.BrokerServiceUrl = proto.String("pulsar://" + secure)
	}
	if plain != "" {
		return plain, nil
	}
	return secure, nil
}

// refreshLoop challenges an authenticated lookup connection whose credentials expire, and
// closes it when they are not renewed (auth.Session).
func (c *clientConn) refreshLoop(protoVersion int32) {
	t := time.NewTicker(c.p.sec.authn.RefreshCheck())
	defer t.Stop()
	for {
		select {
		case <-c.ctx.Done():
			return
		case now := <-t.C:
			act, method, reason := c.se.Tick(now)
			switch act {
			case auth.RefreshChallenge:
				c.send(&pb.BaseCommand{Type: pb.BaseCommand_AUTH_CHALLENGE.Enum(), AuthChallenge: &pb.CommandAuthChallenge{
					ServerVersion: proto.String(ServerVersion), ProtocolVersion: proto.Int32(min(protoVersion, protocolVersion)),
					Challenge: &pb.AuthData{AuthMethodName: proto.String(method), AuthData: auth.RefreshData}}})
			case auth.RefreshClose:
				c.logger.Info("closing client connection: credentials expired", "role", c.se.Principal().String(), "reason", reason)
				_ = c.nc.Close()
				return
			}
		}
	}
}
