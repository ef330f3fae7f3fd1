package broker

import (
	"bufio"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/magnetar-io/magnetar/internal/config"
	"github.com/magnetar-io/magnetar/internal/wire"
	"github.com/magnetar-io/magnetar/internal/wire/pb"
)

// Raw-socket protocol tests: what the broker does with hostile or broken input.

type rawClient struct {
	t  *testing.T
	nc net.Conn
	rd *wire.Reader
}

func dialRaw(t *testing.T, b *testBroker) *rawClient {
	t.Helper()
	nc, err := net.Dial("tcp", b.ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = nc.Close() })
	return &rawClient{t: t, nc: nc, rd: wire.NewReader(bufio.NewReader(nc), 0)}
}

func (r *rawClient) write(b []byte) {
	r.t.Helper()
	if _, err := r.nc.Write(b); err != nil {
		r.t.Fatal(err)
	}
}

func (r *rawClient) send(cmd *pb.BaseCommand) {
	r.t.Helper()
	b, err := wire.AppendCommand(nil, cmd)
	if err != nil {
		r.t.Fatal(err)
	}
	r.write(b)
}

func (r *rawClient) next() (wire.Frame, error) {
	_ = r.nc.SetReadDeadline(time.Now().Add(waitFor))
	return r.rd.ReadFrame()
}

func (r *rawClient) expect(t pb.BaseCommand_Type) *pb.BaseCommand {
	r.t.Helper()
	for {
		f, err := r.next()
		if err != nil {
			r.t.Fatalf("waiting for %s: %v", t, err)
		}
		if f.Cmd.GetType() == t {
			return f.Cmd
		}
		if f.Cmd.GetType() != pb.BaseCommand_PING {
			r.t.Fatalf("got %s, want %s", f.Cmd.GetType(), t)
		}
	}
}

// expectClosed waits until the broker closes the connection.
func (r *rawClient) expectClosed() {
	r.t.Helper()
	for {
		_, err := r.next()
		if err == nil {
			continue
		}
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, net.ErrClosed) || isReset(err) {
			return
		}
		r.t.Fatalf("want the connection closed, got %v", err)
	}
}

func isReset(err error) bool {
	var ne *net.OpError
	return errors.As(err, &ne) && !ne.Timeout()
}

func (r *rawClient) connect() {
	r.t.Helper()
	r.send(&pb.BaseCommand{Type: pb.BaseCommand_CONNECT.Enum(), Connect: &pb.CommandConnect{
		ClientVersion: proto.String("raw-test"), ProtocolVersion: proto.Int32(20)}})
	c := r.expect(pb.BaseCommand_CONNECTED).GetConnected()
	if c.GetServerVersion() == "" || c.GetMaxMessageSize() != 1<<20 {
		r.t.Fatalf("CONNECTED %v", c)
	}
}

func (r *rawClient) ping() {
	r.t.Helper()
	r.send(&pb.BaseCommand{Type: pb.BaseCommand_PING.Enum(), Ping: &pb.CommandPing{}})
	r.expect(pb.BaseCommand_PONG)
}

func TestBadFramesCloseOnlyTheirConnection(t *testing.T) {
	b := startBroker(t, nil)
	bystander := dialRaw(t, b)
	bystander.connect()
	frame := func(total, cmdSize uint32, body ...byte) []byte {
		out := binary.BigEndian.AppendUint32(nil, total)
		out = binary.BigEndian.AppendUint32(out, cmdSize)
		return append(out, body...)
	}
	for _, tc := range []struct {
		name    string
		connect bool
		in      []byte
	}{
		{"oversized frame", true, frame(1<<20+10*1024+1, 4)},
		{"huge frame size", true, frame(0xFFFFFFFF, 4)},
		{"command size beyond frame", true, frame(8, 100, 1, 2, 3, 4)},
		{"garbage protobuf", true, frame(8, 4, 0xff, 0xff, 0xff, 0xff)},
		{"unknown command type", true, frame(7, 3, 0x08, 0xe7, 0x07)},
		{"command before CONNECT", false, mustFrame(t, &pb.BaseCommand{Type: pb.BaseCommand_PING.Enum(), Ping: &pb.CommandPing{}})},
		{"broker-only command", true, mustFrame(t, &pb.BaseCommand{Type: pb.BaseCommand_SEND_RECEIPT.Enum(),
			SendReceipt: &pb.CommandSendReceipt{ProducerId: proto.Uint64(1), SequenceId: proto.Uint64(1)}})},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := dialRaw(t, b)
			if tc.connect {
				r.connect()
			}
			r.write(tc.in)
			r.expectClosed()
			bystander.ping()
		})
	}
}

func mustFrame(t *testing.T, cmd *pb.BaseCommand) []byte {
	t.Helper()
	b, err := wire.AppendCommand(nil, cmd)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestSendErrors checks the per-message rejections: a bad checksum and a message over
// maxMessageSize get SEND_ERROR in order; the connection stays usable.
func TestSendErrors(t *testing.T) {
	b := startBroker(t, nil)
	r := dialRaw(t, b)
	r.connect()
	r.send(&pb.BaseCommand{Type: pb.BaseCommand_PRODUCER.Enum(), Producer: &pb.CommandProducer{
		Topic: proto.String("persistent://public/default/raw"), ProducerId: proto.Uint64(1), RequestId: proto.Uint64(1)}})
	name := r.expect(pb.BaseCommand_PRODUCER_SUCCESS).GetProducerSuccess().GetProducerName()
	md := &pb.MessageMetadata{ProducerName: proto.String(name), SequenceId: proto.Uint64(0), PublishTime: proto.Uint64(1)}
	send := func(seq uint64, payload []byte, corrupt bool) {
		entry, err := wire.AppendEntry(nil, md, payload)
		if err != nil {
			t.Fatal(err)
		}
		if corrupt {
			entry[len(entry)-1] ^= 0xff
		}
		cmd := &pb.BaseCommand{Type: pb.BaseCommand_SEND.Enum(), Send: &pb.CommandSend{ProducerId: proto.Uint64(1), SequenceId: proto.Uint64(seq)}}
		f, err := wire.AppendPayloadCommand(nil, cmd, nil, entry)
		if err != nil {
			t.Fatal(err)
		}
		r.write(f)
	}
	send(0, []byte("fine"), false)
	send(1, []byte("flipped"), true)
	send(2, make([]byte, 1<<20+1), false)
	send(3, []byte("fine again"), false)
	want := []struct {
		typ  pb.BaseCommand_Type
		code pb.ServerError
	}{
		{pb.BaseCommand_SEND_RECEIPT, 0},
		{pb.BaseCommand_SEND_ERROR, pb.ServerError_ChecksumError},
		{pb.BaseCommand_SEND_ERROR, pb.ServerError_NotAllowedError},
		{pb.BaseCommand_SEND_RECEIPT, 0},
	}
	for seq, w := range want {
		f, err := r.next()
		if err != nil {
			t.Fatal(err)
		}
		switch c := f.Cmd; {
		case c.GetType() != w.typ:
			t.Fatalf("seq %d: got %s, want %s", seq, c.GetType(), w.typ)
		case c.SendReceipt != nil && c.GetSendReceipt().GetSequenceId() != uint64(seq):
			t.Fatalf("receipt for %d, want %d", c.GetSendReceipt().GetSequenceId(), seq)
		case c.SendError != nil && (c.GetSendError().GetSequenceId() != uint64(seq) || c.GetSendError().GetError() != w.code):
			t.Fatalf("send error %v, want seq %d %s", c.GetSendError(), seq, w.code)
		}
	}
	r.ping()
}

// TestKeepAlive: the broker pings a silent client and closes it after two intervals.
func TestKeepAlive(t *testing.T) {
	b := startBroker(t, func(c *config.BrokerConfig) { c.KeepAliveIntervalSeconds = 1 })
	r := dialRaw(t, b)
	r.connect()
	f, err := r.next()
	if err != nil || f.Cmd.GetType() != pb.BaseCommand_PING {
		t.Fatalf("want a PING from the broker, got %v %v", f.Cmd, err)
	}
	r.send(&pb.BaseCommand{Type: pb.BaseCommand_PONG.Enum(), Pong: &pb.CommandPong{}})
	r.expectClosed()
}
