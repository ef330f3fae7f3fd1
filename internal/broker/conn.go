package broker

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
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

// conn is one client connection.
//
// Goroutines: serve runs the read loop, which decodes frames and runs the command handlers
// one at a time (so commands of a connection take effect in arrival order); writeLoop
// sends whatever handlers, dispatchers and storage callbacks queued with send*, in one
// write per wake-up (frames queued while a write is in progress go out together);
// keepAlive pings an idle client and closes the connection when it stays silent.
//
// Publish throttling: the read loop acquires the SEND's bytes from the connection's and
// the broker's limiters before reading the next frame, so a producer outrunning storage
// is slowed by TCP back-pressure, never by dropping.
type conn struct {
	s      *Server
	nc     net.Conn
	log    *slog.Logger
	remote string

	// Write side: handlers append to out under wmu and poke wsig; writeLoop swaps out with
	// spare and writes spare without holding wmu.
	wmu    sync.Mutex
	out    wire.Writer
	spare  wire.Writer
	wsig   chan struct{}
	closed chan struct{}
	ctx    context.Context // canceled when the connection closes
	cancel context.CancelFunc
	once   sync.Once
	reason string

	lastRead atomic.Int64 // unix nanos of the last frame received

	publishMem  *byteLimiter // this connection's pending publish bytes
	publishReqs *byteLimiter // this connection's pending SENDs (counted, not bytes)

	// pendingWrite is what is queued or being written to the client; over
	// maxPendingWriteBytesPerConnection the connection is not writable (limits.go).
	pendingWrite atomic.Int64
	writeBlocked atomic.Bool // someone saw it not writable and waits for wrote's wake-up
	writableMu   sync.Mutex
	writableCond *sync.Cond

	// Set by CONNECT (connected is also read by keepAlive).
	connected     atomic.Bool
	clientVersion string
	protoVersion  int32
	bemSupported  bool

	// txnSlots bounds the transaction requests in flight (txn.go).
	txnSlots chan struct{}

	// Authentication (auth.go): the session after CONNECT (nil with authentication off),
	// and the reason to close once what is queued is written (an authentication ERROR).
	sess       atomic.Pointer[auth.Session]
	flushClose atomic.Pointer[string]

	mu        sync.Mutex
	producers map[uint64]*producer
	consumers map[uint64]*consumer
}

// writeTimeout bounds one socket write: a client that stops reading for this long is
// considered dead (its consumers' unacked messages go to others).
const writeTimeout = 60 * time.Second

func newConn(s *Server, nc net.Conn) *conn {
	c := &conn{
		s:           s,
		nc:          nc,
		remote:      nc.RemoteAddr().String(),
		wsig:        make(chan struct{}, 1),
		closed:      make(chan struct{}),
		publishMem:  newByteLimiter(s.cfg.MaxPendingPublishBytesPerConnection),
		publishReqs: newByteLimiter(int64(s.cfg.MaxPendingPublishRequestsPerConnection)),
		producers:   map[uint64]*producer{},
		consumers:   map[uint64]*consumer{},
		txnSlots:    make(chan struct{}, maxTxnRequestsPerConn),
	}
	c.ctx, c.cancel = context.WithCancel(context.Background())
	c.writableCond = sync.NewCond(&c.writableMu)
	c.log = s.log.With("remote", c.remote)
	c.lastRead.Store(time.Now().UnixNano())
	return c
}

// serve runs the connection until it closes.
func (c *conn) serve() {
	go c.writeLoop()
	go c.keepAlive()
	rd := wire.NewReader(bufio.NewReaderSize(c.nc, 64*1024), c.s.maxFrame)
	for {
		f, err := rd.ReadFrame()
		if err != nil {
			switch {
			case errors.Is(err, io.EOF):
				c.close("client closed the connection")
			case errors.Is(err, wire.ErrFrameTooLarge), errors.Is(err, wire.ErrMalformed), errors.Is(err, io.ErrUnexpectedEOF):
				c.log.Warn("closing connection on bad frame", "err", err)
				c.close(err.Error())
			default:
				c.close("read: " + err.Error())
			}
			break
		}
		c.lastRead.Store(time.Now().UnixNano())
		if err := c.handle(f); err != nil {
			if errors.Is(err, errAuthClosed) {
				break // the write loop closes once the ERROR is out
			}
			c.log.Warn("closing connection on protocol violation", "err", err)
			c.close(err.Error())
			break
		}
		c.waitWritable() // a client that does not read gets no more answers queued (limits.go)
	}
	c.cleanup()
}

// errProtocol marks commands that break the protocol; the connection is closed.
var errProtocol = errors.New("broker: protocol violation")

// handle runs the handler of one command. A returned error closes the connection.
func (c *conn) handle(f wire.Frame) error {
	cmd := f.Cmd
	t := cmd.GetType()
	if !c.connected.Load() && t != pb.BaseCommand_CONNECT {
		return fmt.Errorf("%w: %s before CONNECT", errProtocol, t)
	}
	if f.HeadersAndPayload != nil && t != pb.BaseCommand_SEND {
		return fmt.Errorf("%w: payload on a %s command", errProtocol, t)
	}
	switch t {
	case pb.BaseCommand_CONNECT:
		return c.handleConnect(cmd.GetConnect())
	case pb.BaseCommand_PING:
		c.send(&pb.BaseCommand{Type: pb.BaseCommand_PONG.Enum(), Pong: &pb.CommandPong{}})
	case pb.BaseCommand_PONG:
		// lastRead is already updated: that is all a PONG is for.
	case pb.BaseCommand_LOOKUP:
		c.handleLookup(cmd.GetLookupTopic())
	case pb.BaseCommand_PARTITIONED_METADATA:
		c.handlePartitionedMetadata(cmd.GetPartitionMetadata())
	case pb.BaseCommand_GET_TOPICS_OF_NAMESPACE:
		c.handleGetTopicsOfNamespace(cmd.GetGetTopicsOfNamespace())
	case pb.BaseCommand_PRODUCER:
		c.handleProducer(cmd.GetProducer())
	case pb.BaseCommand_SEND:
		return c.handleSend(cmd.GetSend(), f.HeadersAndPayload, f.Owned)
	case pb.BaseCommand_CLOSE_PRODUCER:
		c.handleCloseProducer(cmd.GetCloseProducer())
	case pb.BaseCommand_SUBSCRIBE:
		c.handleSubscribe(cmd.GetSubscribe())
	case pb.BaseCommand_FLOW:
		c.handleFlow(cmd.GetFlow())
	case pb.BaseCommand_ACK:
		c.handleAck(cmd.GetAck())
	case pb.BaseCommand_REDELIVER_UNACKNOWLEDGED_MESSAGES:
		c.handleRedeliver(cmd.GetRedeliverUnacknowledgedMessages())
	case pb.BaseCommand_UNSUBSCRIBE:
		c.handleUnsubscribe(cmd.GetUnsubscribe())
	case pb.BaseCommand_CLOSE_CONSUMER:
		c.handleCloseConsumer(cmd.GetCloseConsumer())
	case pb.BaseCommand_SEEK:
		c.handleSeek(cmd.GetSeek())
	case pb.BaseCommand_GET_LAST_MESSAGE_ID:
		c.handleGetLastMessageID(cmd.GetGetLastMessageId())
	case pb.BaseCommand_GET_SCHEMA:
		c.handleGetSchema(cmd.GetGetSchema())
	case pb.BaseCommand_GET_OR_CREATE_SCHEMA:
		c.handleGetOrCreateSchema(cmd.GetGetOrCreateSchema())
	case pb.BaseCommand_AUTH_RESPONSE:
		return c.handleAuthResponse(cmd.GetAuthResponse()) // auth.go
	case pb.BaseCommand_CONSUMER_STATS:
		c.handleConsumerStats(cmd.GetConsumerStats())
	case pb.BaseCommand_TC_CLIENT_CONNECT_REQUEST, pb.BaseCommand_NEW_TXN, pb.BaseCommand_ADD_PARTITION_TO_TXN,
		pb.BaseCommand_ADD_SUBSCRIPTION_TO_TXN, pb.BaseCommand_END_TXN, pb.BaseCommand_END_TXN_ON_PARTITION,
		pb.BaseCommand_END_TXN_ON_SUBSCRIPTION:
		c.handleTxn(cmd)
	default:
		return fmt.Errorf("%w: unexpected command %s from a client", errProtocol, t)
	}
	return nil
}

// send queues a command frame. Marshalling fails only if we left a required field unset,
// which is a bug; it is logged and the frame dropped rather than sending what the client
// would choke on.
func (c *conn) send(cmd *pb.BaseCommand) {
	c.sendPayload(cmd, nil, nil)
}

// sendPayload queues a payload command frame carrying a stored entry (bem: the broker entry
// metadata block to send before it, nil for none).
func (c *conn) sendPayload(cmd *pb.BaseCommand, bem, entry []byte) {
	c.wmu.Lock()
	before := c.out.Len()
	err := c.out.WritePayloadCommand(cmd, bem, entry)
	c.pendingWrite.Add(int64(c.out.Len() - before))
	c.wmu.Unlock()
	if err != nil {
		c.log.Error("dropping an outgoing command that does not marshal (bug)", "type", cmd.GetType().String(), "err", err)
		return
	}
	select {
	case c.wsig <- struct{}{}:
	default:
	}
}

func (c *conn) writeLoop() {
	for {
		select {
		case <-c.wsig:
		case <-c.closed:
			return
		}
		c.wmu.Lock()
		c.out, c.spare = c.spare, c.out
		c.wmu.Unlock()
		if c.spare.Len() > 0 {
			_ = c.nc.SetWriteDeadline(time.Now().Add(writeTimeout))
			n := c.spare.Len()
			_, err := c.spare.WriteTo(c.nc)
			c.spare.Reset()
			c.wrote(int64(n)) // limits.go
			if err != nil {
				c.close("write: " + err.Error())
				return
			}
		}
		if r := c.flushClose.Load(); r != nil {
			c.close(*r)
			return
		}
	}
}

// keepAlive pings a connection that has been silent for a keep-alive interval and closes
// it after two intervals of silence.
func (c *conn) keepAlive() {
	iv := c.s.cfg.KeepAliveInterval()
	tick := time.NewTicker(iv / 2)
	defer tick.Stop()
	for {
		select {
		case <-c.closed:
			return
		case <-tick.C:
		}
		idle := time.Since(time.Unix(0, c.lastRead.Load()))
		switch {
		case idle >= 2*iv:
			c.log.Info("closing idle connection", "silent_for", idle.Round(time.Second).String())
			c.close("no traffic for two keep-alive intervals")
			return
		case idle >= iv && c.connected.Load():
			c.send(&pb.BaseCommand{Type: pb.BaseCommand_PING.Enum(), Ping: &pb.CommandPing{}})
		}
	}
}

// close shuts the connection down once; the read loop then cleans up.
func (c *conn) close(reason string) {
	c.once.Do(func() {
		c.reason = reason
		c.log.Debug("connection closed", "reason", reason)
		close(c.closed)
		c.cancel()
		_ = c.nc.Close()
		c.publishMem.close()
		c.publishReqs.close()
		c.writableMu.Lock()
		c.writableCond.Broadcast()
		c.writableMu.Unlock()
	})
}

func (c *conn) isClosed() bool {
	select {
	case <-c.closed:
		return true
	default:
		return false
	}
}

// cleanup detaches the connection's producers and consumers; unacknowledged messages of
// its consumers go back to their subscriptions for redelivery.
func (c *conn) cleanup() {
	c.mu.Lock()
	producers := c.producers
	consumers := c.consumers
	c.producers = map[uint64]*producer{}
	c.consumers = map[uint64]*consumer{}
	c.mu.Unlock()
	for _, p := range producers {
		if tp := p.tp.Load(); tp != nil {
			tp.Close()
		}
	}
	for _, cs := range consumers {
		cs.tc.Close()
	}
}

// opTimeout bounds one request's storage and metadata work (topic load, cursor open, seek),
// matching the Go client's default operation timeout.
const opTimeout = 30 * time.Second

// opContext is the context of one request: it ends after opTimeout or when the connection
// closes, so a stuck store never pins a handler forever.
func (c *conn) opContext() (context.Context, context.CancelFunc) {
	return context.WithTimeout(c.withPrincipal(c.ctx), opTimeout)
}

// sendError answers a failed request with ERROR, mapping err through wire's table.
func (c *conn) sendError(requestID uint64, err error) {
	code, _ := wire.ServerErrorFor(err)
	c.send(&pb.BaseCommand{Type: pb.BaseCommand_ERROR.Enum(), Error: &pb.CommandError{
		RequestId: proto.Uint64(requestID), Error: code.Enum(), Message: proto.String(err.Error())}})
}

func (c *conn) sendSuccess(requestID uint64) {
	c.send(&pb.BaseCommand{Type: pb.BaseCommand_SUCCESS.Enum(), Success: &pb.CommandSuccess{RequestId: proto.Uint64(requestID)}})
}
