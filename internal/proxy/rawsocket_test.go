package proxy_test

import (
	"bufio"
	"encoding/binary"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/apache/pulsar-client-go/pulsar"

	"github.com/magnetar-io/magnetar/internal/wire"
	"github.com/magnetar-io/magnetar/internal/wire/pb"
)

// rawConn is a hand-driven binary connection to the proxy.
type rawConn struct {
	t  *testing.T
	nc net.Conn
	r  *wire.Reader
}

func dialRaw(t *testing.T, addr string) *rawConn {
	t.Helper()
	nc, err := net.Dial("tcp", addr)
	must(t, "dial", err)
	t.Cleanup(func() { _ = nc.Close() })
	_ = nc.SetDeadline(time.Now().Add(time.Minute))
	return &rawConn{t: t, nc: nc, r: wire.NewReader(bufio.NewReader(nc), 0)}
}

func (c *rawConn) send(cmd *pb.BaseCommand) {
	c.t.Helper()
	buf, err := wire.AppendCommand(nil, cmd)
	must(c.t, "encode", err)
	_, err = c.nc.Write(buf)
	must(c.t, "write", err)
}

func (c *rawConn) read() *pb.BaseCommand {
	c.t.Helper()
	f, err := c.r.ReadFrame()
	must(c.t, "read frame", err)
	return f.Cmd
}

func (c *rawConn) connect(proxyTo string) *pb.BaseCommand {
	c.t.Helper()
	cc := &pb.CommandConnect{ClientVersion: proto.String("raw-test"), ProtocolVersion: proto.Int32(20)}
	if proxyTo != "" {
		cc.ProxyToBrokerUrl = proto.String(proxyTo)
	}
	c.send(&pb.BaseCommand{Type: pb.BaseCommand_CONNECT.Enum(), Connect: cc})
	return c.read()
}

// expectClosed waits for the proxy to close the connection (EOF or reset).
func (c *rawConn) expectClosed() {
	c.t.Helper()
	buf := make([]byte, 1024)
	for {
		_, err := c.nc.Read(buf)
		if err == nil {
			continue
		}
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			c.t.Fatal("connection still open")
		}
		return
	}
}

func TestMalformedFrameClosesOnlyThatConnection(t *testing.T) {
	_, p := proxyInFront(t)
	c := clientVia(t, p)
	ctx := testCtx(t)
	const topic = "persistent://public/default/proxy-malformed"
	prod, err := c.CreateProducer(pulsar.ProducerOptions{Topic: topic})
	must(t, "producer", err)
	defer prod.Close()
	_, err = prod.Send(ctx, &pulsar.ProducerMessage{Payload: []byte("before")})
	must(t, "send before", err)

	// 1. Garbage as the very first frame: an ERROR, then close.
	raw := dialRaw(t, p.Addr())
	var junk [12]byte
	binary.BigEndian.PutUint32(junk[:], 8)
	binary.BigEndian.PutUint32(junk[4:], 4)
	copy(junk[8:], []byte{0xff, 0xff, 0xff, 0xff})
	_, err = raw.nc.Write(junk[:])
	must(t, "write junk", err)
	if cmd := raw.read(); cmd.GetType() != pb.BaseCommand_ERROR || !strings.Contains(cmd.GetError().GetMessage(), "malformed") {
		t.Fatalf("answer to junk: %v", cmd)
	}
	raw.expectClosed()

	// 2. A valid lookup connection, then a malformed frame: closed.
	raw = dialRaw(t, p.Addr())
	if cmd := raw.connect(""); cmd.GetType() != pb.BaseCommand_CONNECTED {
		t.Fatalf("connect: %v", cmd)
	}
	_, err = raw.nc.Write(junk[:])
	must(t, "write junk", err)
	raw.expectClosed()

	// 3. An oversized frame before splicing: closed.
	raw = dialRaw(t, p.Addr())
	var huge [8]byte
	binary.BigEndian.PutUint32(huge[:], 1<<30)
	_, err = raw.nc.Write(huge[:])
	must(t, "write huge", err)
	if cmd := raw.read(); cmd.GetType() != pb.BaseCommand_ERROR {
		t.Fatalf("answer to an oversized frame: %v", cmd)
	}
	raw.expectClosed()

	// 4. A first command that is not CONNECT.
	raw = dialRaw(t, p.Addr())
	raw.send(&pb.BaseCommand{Type: pb.BaseCommand_PING.Enum(), Ping: &pb.CommandPing{}})
	if cmd := raw.read(); cmd.GetType() != pb.BaseCommand_ERROR || !strings.Contains(cmd.GetError().GetMessage(), "expected CONNECT") {
		t.Fatalf("answer to PING first: %v", cmd)
	}
	raw.expectClosed()

	// The other client's connections were not disturbed.
	_, err = prod.Send(ctx, &pulsar.ProducerMessage{Payload: []byte("after")})
	must(t, "send after", err)
}

func TestLookupConnectionServesOnlyLookups(t *testing.T) {
	_, p := proxyInFront(t)
	raw := dialRaw(t, p.Addr())
	if cmd := raw.connect(""); cmd.GetType() != pb.BaseCommand_CONNECTED || cmd.GetConnected().GetServerVersion() != "Magnetar Proxy" {
		t.Fatalf("connect: %v", cmd)
	}
	raw.send(&pb.BaseCommand{Type: pb.BaseCommand_PING.Enum(), Ping: &pb.CommandPing{}})
	if cmd := raw.read(); cmd.GetType() != pb.BaseCommand_PONG {
		t.Fatalf("ping: %v", cmd)
	}
	raw.send(&pb.BaseCommand{Type: pb.BaseCommand_LOOKUP.Enum(), LookupTopic: &pb.CommandLookupTopic{
		Topic: proto.String("persistent://public/default/raw-lookup"), RequestId: proto.Uint64(7)}})
	cmd := raw.read()
	lr := cmd.GetLookupTopicResponse()
	if lr.GetRequestId() != 7 || lr.GetResponse() != pb.CommandLookupTopicResponse_Connect || !lr.GetProxyThroughServiceUrl() || !lr.GetAuthoritative() {
		t.Fatalf("lookup: %v", cmd)
	}
	raw.send(&pb.BaseCommand{Type: pb.BaseCommand_LOOKUP.Enum(), LookupTopic: &pb.CommandLookupTopic{
		Topic: proto.String("bogus-domain://t/ns/x"), RequestId: proto.Uint64(8)}})
	if cmd := raw.read(); cmd.GetLookupTopicResponse().GetResponse() != pb.CommandLookupTopicResponse_Failed || cmd.GetLookupTopicResponse().GetRequestId() != 8 {
		t.Fatalf("bad-topic lookup: %v", cmd)
	}
	raw.send(&pb.BaseCommand{Type: pb.BaseCommand_PRODUCER.Enum(), Producer: &pb.CommandProducer{
		Topic: proto.String("persistent://public/default/raw-lookup"), ProducerId: proto.Uint64(1), RequestId: proto.Uint64(9)}})
	if cmd := raw.read(); cmd.GetType() != pb.BaseCommand_ERROR || cmd.GetError().GetRequestId() != 9 || cmd.GetError().GetError() != pb.ServerError_NotAllowedError {
		t.Fatalf("producer on a lookup connection: %v", cmd)
	}
}

func TestProxyToUnknownAddressRefused(t *testing.T) {
	_, p := proxyInFront(t)
	// A listener that is not a broker: the proxy must never connect to it.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	must(t, "listen", err)
	defer ln.Close()
	accepted := make(chan struct{}, 1)
	go func() {
		if nc, err := ln.Accept(); err == nil {
			accepted <- struct{}{}
			_ = nc.Close()
		}
	}()
	for _, target := range []string{ln.Addr().String(), "pulsar://" + ln.Addr().String(), "not an address", "169.254.169.254:80"} {
		raw := dialRaw(t, p.Addr())
		cmd := raw.connect(target)
		if cmd.GetType() != pb.BaseCommand_ERROR || cmd.GetError().GetError() != pb.ServerError_NotAllowedError ||
			!strings.Contains(cmd.GetError().GetMessage(), "refusing proxy_to_broker_url") {
			t.Fatalf("CONNECT proxy_to_broker_url=%q: %v", target, cmd)
		}
		raw.expectClosed()
	}
	select {
	case <-accepted:
		t.Fatal("the proxy connected to a non-broker address")
	default:
	}

	// The configured broker is accepted: the answer is the broker's own CONNECTED.
	raw := dialRaw(t, p.Addr())
	s := standaloneForTest(t)
	cmd := raw.connect(s.BrokerAddr())
	if cmd.GetType() != pb.BaseCommand_CONNECTED || cmd.GetConnected().GetServerVersion() == "Magnetar Proxy" {
		t.Fatalf("CONNECT to the broker: %v", cmd)
	}
	raw.send(&pb.BaseCommand{Type: pb.BaseCommand_PING.Enum(), Ping: &pb.CommandPing{}})
	if cmd := raw.read(); cmd.GetType() != pb.BaseCommand_PONG {
		t.Fatalf("ping through the splice: %v", cmd)
	}
}
