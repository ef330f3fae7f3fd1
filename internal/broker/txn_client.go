package broker

import (
	"bufio"
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"strings"
	"sync"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/magnetar-io/magnetar/internal/auth"
	"github.com/magnetar-io/magnetar/internal/wire"
	"github.com/magnetar-io/magnetar/internal/wire/pb"
)

// The transaction buffer client: a coordinator ends transactions on topics other brokers
// own with END_TXN_ON_PARTITION / END_TXN_ON_SUBSCRIPTION over the binary protocol, as
// Pulsar's TransactionBufferClient does. One connection per peer broker, multiplexed by
// request id; a failed connection is dropped and the next request dials again (the
// coordinator retries failed calls).
//
// With security on, the broker is a client of its peers like any other (the brokerClient*
// keys, auth.BrokerClient): pulsar+ssl:// URLs (chosen with brokerClientTlsEnabled) are
// dialled with TLS against brokerClientTrustCertsFilePath, CONNECT carries the broker's
// credentials, and an AUTH_CHALLENGE is answered with fresh ones (a token file re-read), so a
// peer connection outlives no token. The peer authorizes END_TXN_ON_* as topic admin
// (conn.endOnPartition): the broker's role must be a superuser.

// peerPool holds the connections to other brokers.
type peerPool struct {
	s   *Server
	sec peerSecurity

	mu     sync.Mutex
	closed bool
	conns  map[string]*peerConn // by URL
}

// peerSecurity is what the broker presents to its peers.
type peerSecurity struct {
	tls  *tls.Config      // for pulsar+ssl:// peers
	auth *auth.ClientAuth // CONNECT's credentials (none: Method "")
}

func newPeerPool(s *Server) (*peerPool, error) {
	tc, a, err := auth.BrokerClient(s.cfg.Security.Client, s.log)
	if err != nil {
		return nil, fmt.Errorf("%w: brokerClient settings: %w", ErrBadConfig, err)
	}
	return &peerPool{s: s, sec: peerSecurity{tls: tc, auth: a}, conns: map[string]*peerConn{}}, nil
}

// peerConn is one connection to a peer broker.
type peerConn struct {
	addr string
	nc   net.Conn
	wmu  sync.Mutex
	sec  peerSecurity

	mu      sync.Mutex
	next    uint64
	pending map[uint64]chan *pb.BaseCommand
	err     error
}

func (pp *peerPool) close() {
	pp.mu.Lock()
	pp.closed = true
	conns := pp.conns
	pp.conns = map[string]*peerConn{}
	pp.mu.Unlock()
	for _, pc := range conns {
		pc.fail(fmt.Errorf("%w: closing", errPeer))
	}
}

// get returns the connection to url (pulsar://host:port or pulsar+ssl://host:port), dialing
// if needed.
func (pp *peerPool) get(ctx context.Context, url string) (*peerConn, error) {
	pp.mu.Lock()
	if pp.closed {
		pp.mu.Unlock()
		return nil, fmt.Errorf("%w: the broker is closing", errPeer)
	}
	if pc := pp.conns[url]; pc != nil && !pc.failed() {
		pp.mu.Unlock()
		return pc, nil
	}
	pp.mu.Unlock()
	pc, err := dialPeer(ctx, url, pp.s.maxFrame, pp.sec)
	if err != nil {
		return nil, err
	}
	pp.mu.Lock()
	defer pp.mu.Unlock()
	if old := pp.conns[url]; old != nil && !old.failed() {
		go pc.fail(fmt.Errorf("%w: a duplicate", errPeer))
		return old, nil
	}
	pp.conns[url] = pc
	return pc, nil
}

const peerClientVersion = ServerVersion + " (transaction buffer client)"

func dialPeer(ctx context.Context, url string, maxFrame int, sec peerSecurity) (*peerConn, error) {
	addr, useTLS := strings.CutPrefix(url, "pulsar+ssl://")
	if !useTLS {
		addr = strings.TrimPrefix(url, "pulsar://")
	}
	var d net.Dialer
	nc, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", errPeer, addr, err)
	}
	if dl, ok := ctx.Deadline(); ok {
		_ = nc.SetDeadline(dl)
	}
	if useTLS {
		tc, err := auth.ClientHandshake(ctx, nc, sec.tls, addr)
		if err != nil {
			return nil, fmt.Errorf("%w: %w (brokerClientTrustCertsFilePath)", errPeer, err)
		}
		nc = tc
	}
	br := bufio.NewReader(nc)
	connect := &pb.CommandConnect{ClientVersion: proto.String(peerClientVersion), ProtocolVersion: proto.Int32(maxProtocolVersion),
		FeatureFlags: &pb.FeatureFlags{SupportsAuthRefresh: proto.Bool(true)}}
	if m := sec.auth.Method; m != "" {
		data, derr := sec.auth.Data(ctx)
		if derr != nil {
			_ = nc.Close()
			return nil, fmt.Errorf("%w: %s: brokerClientAuthenticationParameters: %w", errPeer, addr, derr)
		}
		connect.AuthMethodName, connect.AuthData = proto.String(m), data
	}
	buf, err := wire.AppendCommand(nil, &pb.BaseCommand{Type: pb.BaseCommand_CONNECT.Enum(), Connect: connect})
	if err == nil {
		_, err = nc.Write(buf)
	}
	r := wire.NewReader(br, maxFrame)
	var f wire.Frame
	if err == nil {
		f, err = r.ReadFrame()
	}
	if err == nil && f.Cmd.GetType() != pb.BaseCommand_CONNECTED {
		err = fmt.Errorf("answered CONNECT with %s: %s", f.Cmd.GetType(), f.Cmd.GetError().GetMessage())
	}
	if err != nil {
		_ = nc.Close()
		return nil, fmt.Errorf("%w: %s: %w", errPeer, addr, err)
	}
	_ = nc.SetDeadline(time.Time{})
	pc := &peerConn{addr: addr, nc: nc, sec: sec, pending: map[uint64]chan *pb.BaseCommand{}}
	go pc.readLoop(r)
	return pc, nil
}

func (pc *peerConn) failed() bool {
	pc.mu.Lock()
	defer pc.mu.Unlock()
	return pc.err != nil
}

func (pc *peerConn) fail(err error) {
	pc.mu.Lock()
	if pc.err != nil {
		pc.mu.Unlock()
		return
	}
	pc.err = err
	pending := pc.pending
	pc.pending = nil
	pc.mu.Unlock()
	_ = pc.nc.Close()
	for _, ch := range pending {
		close(ch)
	}
}

func (pc *peerConn) write(cmd *pb.BaseCommand) error {
	buf, err := wire.AppendCommand(nil, cmd)
	if err != nil {
		return err
	}
	pc.wmu.Lock()
	defer pc.wmu.Unlock()
	_ = pc.nc.SetWriteDeadline(time.Now().Add(writeTimeout))
	_, err = pc.nc.Write(buf)
	return err
}

func (pc *peerConn) readLoop(r *wire.Reader) {
	for {
		f, err := r.ReadFrame()
		if err != nil {
			pc.fail(fmt.Errorf("%w: %s: %w", errPeer, pc.addr, err))
			return
		}
		var id uint64
		switch cmd := f.Cmd; cmd.GetType() {
		case pb.BaseCommand_PING:
			if err := pc.write(&pb.BaseCommand{Type: pb.BaseCommand_PONG.Enum(), Pong: &pb.CommandPong{}}); err != nil {
				pc.fail(fmt.Errorf("%w: %s: %w", errPeer, pc.addr, err))
				return
			}
			continue
		case pb.BaseCommand_AUTH_CHALLENGE:
			// Off the read loop: fetching a token (a file, an OAuth2 server) may take a while.
			go pc.answerChallenge()
			continue
		case pb.BaseCommand_END_TXN_ON_PARTITION_RESPONSE:
			id = cmd.GetEndTxnOnPartitionResponse().GetRequestId()
		case pb.BaseCommand_END_TXN_ON_SUBSCRIPTION_RESPONSE:
			id = cmd.GetEndTxnOnSubscriptionResponse().GetRequestId()
		case pb.BaseCommand_ERROR:
			id = cmd.GetError().GetRequestId()
		default:
			continue
		}
		pc.mu.Lock()
		ch := pc.pending[id]
		delete(pc.pending, id)
		pc.mu.Unlock()
		if ch != nil {
			ch <- f.Cmd
		}
	}
}

// answerChallenge answers the peer's AUTH_CHALLENGE with the current credentials; a failure
// drops the connection (the next request dials again).
func (pc *peerConn) answerChallenge() {
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	data, err := pc.sec.auth.Data(ctx)
	if err == nil {
		err = pc.write(&pb.BaseCommand{Type: pb.BaseCommand_AUTH_RESPONSE.Enum(), AuthResponse: &pb.CommandAuthResponse{
			ClientVersion: proto.String(peerClientVersion), ProtocolVersion: proto.Int32(maxProtocolVersion),
			Response: &pb.AuthData{AuthMethodName: proto.String(pc.sec.auth.Method), AuthData: data}}})
	}
	if err != nil {
		pc.fail(fmt.Errorf("%w: %s: answering AUTH_CHALLENGE: %w", errPeer, pc.addr, err))
	}
}

// request sends an END_TXN_ON_* command to url and returns the error its response carries.
func (pp *peerPool) request(ctx context.Context, url string, cmd *pb.BaseCommand) error {
	pc, err := pp.get(ctx, url)
	if err != nil {
		return err
	}
	ch := make(chan *pb.BaseCommand, 1)
	pc.mu.Lock()
	if pc.err != nil {
		err := pc.err
		pc.mu.Unlock()
		return err
	}
	pc.next++
	id := pc.next
	pc.pending[id] = ch
	pc.mu.Unlock()
	switch {
	case cmd.EndTxnOnPartition != nil:
		cmd.EndTxnOnPartition.RequestId = proto.Uint64(id)
	case cmd.EndTxnOnSubscription != nil:
		cmd.EndTxnOnSubscription.RequestId = proto.Uint64(id)
	}
	if err := pc.write(cmd); err != nil {
		pc.fail(fmt.Errorf("%w: %s: %w", errPeer, pc.addr, err))
		return fmt.Errorf("%w: %s: %w", errPeer, pc.addr, err)
	}
	var resp *pb.BaseCommand
	select {
	case resp = <-ch:
	case <-ctx.Done():
		pc.mu.Lock()
		delete(pc.pending, id)
		pc.mu.Unlock()
		return ctx.Err()
	}
	if resp == nil {
		return fmt.Errorf("%w: %s: connection lost", errPeer, pc.addr)
	}
	var code *pb.ServerError
	var msg string
	switch {
	case resp.EndTxnOnPartitionResponse != nil:
		code, msg = resp.EndTxnOnPartitionResponse.Error, resp.EndTxnOnPartitionResponse.GetMessage()
	case resp.EndTxnOnSubscriptionResponse != nil:
		code, msg = resp.EndTxnOnSubscriptionResponse.Error, resp.EndTxnOnSubscriptionResponse.GetMessage()
	case resp.Error != nil:
		code, msg = resp.Error.Error, resp.Error.GetMessage()
	}
	if code == nil {
		return nil
	}
	if class := wire.ErrorFor(*code); class != nil {
		return fmt.Errorf("%w: %s: %s", class, pc.addr, msg)
	}
	return fmt.Errorf("%w: %s: %s: %s", errPeer, pc.addr, code, msg)
}
