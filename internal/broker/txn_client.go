package broker

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"strings"
	"sync"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/magnetar-io/magnetar/internal/wire"
	"github.com/magnetar-io/magnetar/internal/wire/pb"
)

// The transaction buffer client: a coordinator ends transactions on topics other brokers
// own with END_TXN_ON_PARTITION / END_TXN_ON_SUBSCRIPTION over the binary protocol, as
// Pulsar's TransactionBufferClient does. One connection per peer broker, multiplexed by
// request id; a failed connection is dropped and the next request dials again (the
// coordinator retries failed calls).

// peerPool holds the connections to other brokers.
type peerPool struct {
	s *Server

	mu     sync.Mutex
	closed bool
	conns  map[string]*peerConn
}

func newPeerPool(s *Server) *peerPool { return &peerPool{s: s, conns: map[string]*peerConn{}} }

// peerConn is one connection to a peer broker.
type peerConn struct {
	addr string
	nc   net.Conn
	wmu  sync.Mutex

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

// get returns the connection to url (pulsar://host:port), dialing if needed.
func (pp *peerPool) get(ctx context.Context, url string) (*peerConn, error) {
	addr := strings.TrimPrefix(url, "pulsar://")
	pp.mu.Lock()
	if pp.closed {
		pp.mu.Unlock()
		return nil, fmt.Errorf("%w: the broker is closing", errPeer)
	}
	if pc := pp.conns[addr]; pc != nil && !pc.failed() {
		pp.mu.Unlock()
		return pc, nil
	}
	pp.mu.Unlock()
	pc, err := dialPeer(ctx, addr, pp.s.maxFrame)
	if err != nil {
		return nil, err
	}
	pp.mu.Lock()
	defer pp.mu.Unlock()
	if old := pp.conns[addr]; old != nil && !old.failed() {
		go pc.fail(fmt.Errorf("%w: a duplicate", errPeer))
		return old, nil
	}
	pp.conns[addr] = pc
	return pc, nil
}

func dialPeer(ctx context.Context, addr string, maxFrame int) (*peerConn, error) {
	var d net.Dialer
	nc, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", errPeer, addr, err)
	}
	br := bufio.NewReader(nc)
	if dl, ok := ctx.Deadline(); ok {
		_ = nc.SetDeadline(dl)
	}
	buf, err := wire.AppendCommand(nil, &pb.BaseCommand{Type: pb.BaseCommand_CONNECT.Enum(), Connect: &pb.CommandConnect{
		ClientVersion: proto.String(ServerVersion + " (transaction buffer client)"), ProtocolVersion: proto.Int32(maxProtocolVersion)}})
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
	pc := &peerConn{addr: addr, nc: nc, pending: map[uint64]chan *pb.BaseCommand{}}
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
