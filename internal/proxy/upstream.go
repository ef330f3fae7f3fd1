package proxy

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
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/magnetar-io/magnetar/internal/wire"
	"github.com/magnetar-io/magnetar/internal/wire/pb"
)

// clientVersion is what the proxy says in its own CONNECT to brokers (lookup connections).
const clientVersion = "Magnetar-Proxy"

// protocolVersion is the Pulsar protocol version the proxy speaks on its own connections.
const protocolVersion = 20

// readOneFrame reads exactly one frame from br, consuming precisely its bytes (unlike
// wire.Reader, which discards lazily), so whatever follows stays in br for the splice.
func readOneFrame(br *bufio.Reader, maxFrame int) (wire.Frame, error) {
	var head [4]byte
	if _, err := io.ReadFull(br, head[:]); err != nil {
		return wire.Frame{}, err
	}
	total := int(binary.BigEndian.Uint32(head[:]))
	if total > maxFrame || total < 0 {
		return wire.Frame{}, fmt.Errorf("%w: %d bytes, limit %d", wire.ErrFrameTooLarge, total, maxFrame)
	}
	frame := make([]byte, 4+total)
	copy(frame, head[:])
	if _, err := io.ReadFull(br, frame[4:]); err != nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return wire.Frame{}, err
	}
	return wire.DecodeFrame(frame)
}

// writeCommand encodes cmd and writes it to w in one call.
func writeCommand(w io.Writer, cmd *pb.BaseCommand) error {
	buf, err := wire.AppendCommand(nil, cmd)
	if err != nil {
		return err
	}
	_, err = w.Write(buf)
	return err
}

// handshake sends CONNECT on a fresh broker connection and reads the broker's first frame
// (CONNECTED, ERROR or AUTH_CHALLENGE), all within the deadline.
func handshake(nc net.Conn, br *bufio.Reader, connect *pb.CommandConnect, deadline time.Time, maxFrame int) (*pb.BaseCommand, error) {
	_ = nc.SetDeadline(deadline)
	defer func() { _ = nc.SetDeadline(time.Time{}) }()
	if err := writeCommand(nc, &pb.BaseCommand{Type: pb.BaseCommand_CONNECT.Enum(), Connect: connect}); err != nil {
		return nil, err
	}
	f, err := readOneFrame(br, maxFrame)
	if err != nil {
		return nil, err
	}
	return f.Cmd, nil
}

// requestIDField finds the set sub-command of cmd and its request_id field, through
// reflection so one helper serves every request and response type.
func requestIDField(cmd *pb.BaseCommand) (protoreflect.Message, protoreflect.FieldDescriptor) {
	var sub protoreflect.Message
	var fd protoreflect.FieldDescriptor
	cmd.ProtoReflect().Range(func(f protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		if f.Message() == nil {
			return true
		}
		m := v.Message()
		if id := m.Descriptor().Fields().ByName("request_id"); id != nil {
			sub, fd = m, id
			return false
		}
		return true
	})
	return sub, fd
}

// RequestID returns the request_id of cmd's sub-command, if it has one that is set.
func RequestID(cmd *pb.BaseCommand) (uint64, bool) {
	m, fd := requestIDField(cmd)
	if m == nil || !m.Has(fd) {
		return 0, false
	}
	return m.Get(fd).Uint(), true
}

// setRequestID sets the request_id of cmd's sub-command; false if it has none.
func setRequestID(cmd *pb.BaseCommand, id uint64) bool {
	m, fd := requestIDField(cmd)
	if m == nil {
		return false
	}
	m.Set(fd, protoreflect.ValueOfUint64(id))
	return true
}

// upstream is one multiplexed binary connection from the proxy to a broker, used for the
// requests the proxy answers itself (lookups, partition metadata, topic lists, schemas).
// Requests get the connection's own request ids; responses are matched by them.
type upstream struct {
	addr   string
	nc     net.Conn
	logger *slog.Logger

	wmu sync.Mutex // serialises writes

	mu      sync.Mutex
	nextID  uint64
	pending map[uint64]chan *pb.BaseCommand
	err     error // set once the connection failed; pending requests got it
	done    chan struct{}
	onFail  func(*upstream) // drops it from the pool, so dead brokers leave no entries
}

func (u *upstream) fail(err error) {
	u.mu.Lock()
	if u.err != nil {
		u.mu.Unlock()
		return
	}
	u.err = err
	pending := u.pending
	u.pending = nil
	close(u.done)
	u.mu.Unlock()
	_ = u.nc.Close()
	for _, ch := range pending {
		close(ch)
	}
	if u.onFail != nil {
		u.onFail(u)
	}
}

func (u *upstream) failed() bool {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.err != nil
}

// readLoop delivers responses to their waiters and answers the broker's keep-alive PINGs.
func (u *upstream) readLoop(br *bufio.Reader, maxFrame int) {
	r := wire.NewReader(br, maxFrame)
	for {
		f, err := r.ReadFrame()
		if err != nil {
			u.fail(fmt.Errorf("%w: %s: %v", ErrBrokerUnavailable, u.addr, err))
			return
		}
		switch f.Cmd.GetType() {
		case pb.BaseCommand_PING:
			if err := u.write(&pb.BaseCommand{Type: pb.BaseCommand_PONG.Enum(), Pong: &pb.CommandPong{}}); err != nil {
				u.fail(fmt.Errorf("%w: %s: %v", ErrBrokerUnavailable, u.addr, err))
				return
			}
			continue
		case pb.BaseCommand_PONG:
			continue
		}
		id, ok := RequestID(f.Cmd)
		if !ok {
			u.logger.Debug("ignoring broker command without request id", "type", f.Cmd.GetType())
			continue
		}
		u.mu.Lock()
		ch := u.pending[id]
		delete(u.pending, id)
		u.mu.Unlock()
		if ch != nil {
			ch <- f.Cmd // buffered, never blocks
		}
	}
}

func (u *upstream) write(cmd *pb.BaseCommand) error {
	u.wmu.Lock()
	defer u.wmu.Unlock()
	_ = u.nc.SetWriteDeadline(time.Now().Add(30 * time.Second))
	return writeCommand(u.nc, cmd)
}

// request sends cmd (after giving it a fresh request id) and waits for the response, whose
// request id is then the caller's to set.
func (u *upstream) request(ctx context.Context, cmd *pb.BaseCommand) (*pb.BaseCommand, error) {
	ch := make(chan *pb.BaseCommand, 1)
	u.mu.Lock()
	if u.err != nil {
		err := u.err
		u.mu.Unlock()
		return nil, err
	}
	u.nextID++
	id := u.nextID
	u.pending[id] = ch
	u.mu.Unlock()
	forget := func() {
		u.mu.Lock()
		if u.pending != nil {
			delete(u.pending, id)
		}
		u.mu.Unlock()
	}
	if !setRequestID(cmd, id) {
		forget()
		return nil, fmt.Errorf("%w: %s has no request id", ErrUnsupported, cmd.GetType())
	}
	if err := u.write(cmd); err != nil {
		u.fail(fmt.Errorf("%w: %s: %v", ErrBrokerUnavailable, u.addr, err))
		forget()
		return nil, fmt.Errorf("%w: %s: %v", ErrBrokerUnavailable, u.addr, err)
	}
	select {
	case resp, ok := <-ch:
		if !ok {
			u.mu.Lock()
			err := u.err
			u.mu.Unlock()
			return nil, err
		}
		return resp, nil
	case <-ctx.Done():
		forget()
		return nil, fmt.Errorf("%w: %s: no answer: %v", ErrBrokerUnavailable, u.addr, ctx.Err())
	}
}

// pool keeps one upstream per broker address and bounds requests in flight.
type pool struct {
	connectTimeout time.Duration
	maxFrame       int
	logger         *slog.Logger
	dialer         dialFunc
	sem            chan struct{}

	mu     sync.Mutex
	conns  map[string]*upstream
	dials  map[string]chan struct{} // address -> closed when the dial in progress ends
	closed bool
}

// dialFunc connects to the broker at addr and returns the connection and the CONNECT to
// send on it (security.go decides TLS and credentials).
type dialFunc func(ctx context.Context, addr string) (net.Conn, *pb.CommandConnect, error)

// newPool makes a pool; sem bounds the requests in flight (it may be shared by pools, so
// the bound holds for all clients together).
func newPool(connectTimeout time.Duration, maxFrame int, sem chan struct{}, logger *slog.Logger, dial dialFunc) *pool {
	return &pool{
		connectTimeout: connectTimeout, maxFrame: maxFrame, logger: logger, dialer: dial,
		sem: sem, conns: map[string]*upstream{}, dials: map[string]chan struct{}{},
	}
}

// request sends cmd to the broker at addr and returns its answer (response or ERROR).
func (p *pool) request(ctx context.Context, addr string, cmd *pb.BaseCommand) (*pb.BaseCommand, error) {
	select {
	case p.sem <- struct{}{}:
	default:
		return nil, fmt.Errorf("%w: too many requests in flight (maxConcurrentLookupRequests=%d)", ErrTooManyRequests, cap(p.sem))
	}
	defer func() { <-p.sem }()
	for attempt := 0; ; attempt++ {
		u, fresh, err := p.get(ctx, addr)
		if err != nil {
			return nil, err
		}
		resp, err := u.request(ctx, proto.Clone(cmd).(*pb.BaseCommand))
		// A pooled connection may have died unnoticed (broker restarted); the requests
		// sent here are idempotent, so retry once on a fresh connection before failing.
		if err != nil && !fresh && attempt == 0 && errors.Is(err, ErrBrokerUnavailable) && ctx.Err() == nil {
			continue
		}
		return resp, err
	}
}

// get returns a live upstream to addr, dialling one (once, for all concurrent callers);
// fresh says it was dialled for this call.
func (p *pool) get(ctx context.Context, addr string) (*upstream, bool, error) {
	for {
		p.mu.Lock()
		if p.closed {
			p.mu.Unlock()
			return nil, false, ErrClosed
		}
		if u := p.conns[addr]; u != nil && !u.failed() {
			p.mu.Unlock()
			return u, false, nil
		}
		if wait, ok := p.dials[addr]; ok {
			p.mu.Unlock()
			select {
			case <-wait:
				continue
			case <-ctx.Done():
				return nil, false, ctx.Err()
			}
		}
		wait := make(chan struct{})
		p.dials[addr] = wait
		p.mu.Unlock()

		u, err := p.dial(ctx, addr)
		p.mu.Lock()
		delete(p.dials, addr)
		close(wait)
		if err == nil {
			if p.closed {
				p.mu.Unlock()
				u.fail(ErrClosed)
				return nil, false, ErrClosed
			}
			p.conns[addr] = u
		}
		p.mu.Unlock()
		return u, true, err
	}
}

func (p *pool) dial(ctx context.Context, addr string) (*upstream, error) {
	dctx, cancel := context.WithTimeout(ctx, p.connectTimeout)
	defer cancel()
	nc, connect, err := p.dialer(dctx, addr)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrBrokerUnavailable, addr, err)
	}
	br := bufio.NewReaderSize(nc, 16<<10)
	resp, err := handshake(nc, br, connect, time.Now().Add(p.connectTimeout), p.maxFrame)
	if err != nil {
		_ = nc.Close()
		return nil, fmt.Errorf("%w: %s: handshake: %v", ErrBrokerUnavailable, addr, err)
	}
	if resp.GetType() != pb.BaseCommand_CONNECTED {
		_ = nc.Close()
		return nil, fmt.Errorf("%w: %s: handshake answered %s: %s", ErrBrokerUnavailable, addr, resp.GetType(), resp.GetError().GetMessage())
	}
	u := &upstream{addr: addr, nc: nc, logger: p.logger.With("broker", addr), pending: map[uint64]chan *pb.BaseCommand{}, done: make(chan struct{}),
		onFail: p.forget}
	go u.readLoop(br, p.maxFrame)
	return u, nil
}

// forget drops u from the pool if it is still the connection for its address.
func (p *pool) forget(u *upstream) {
	p.mu.Lock()
	if p.conns[u.addr] == u {
		delete(p.conns, u.addr)
	}
	p.mu.Unlock()
}

func (p *pool) close() {
	p.mu.Lock()
	p.closed = true
	conns := p.conns
	p.conns = map[string]*upstream{}
	p.mu.Unlock()
	for _, u := range conns {
		u.fail(ErrClosed)
	}
}
