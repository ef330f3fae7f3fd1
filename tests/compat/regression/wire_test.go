package regression

import (
	"bufio"
	"net"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/magnetar-io/magnetar/internal/wire"
	"github.com/magnetar-io/magnetar/internal/wire/pb"
)

// rawConn is a binary-protocol connection that shows the broker's answers field by field,
// for what the Go client tolerates and the Java client does not (absent optional fields).
type rawConn struct {
	t  *testing.T
	c  net.Conn
	rd *wire.Reader
}

func dialRaw(t *testing.T) *rawConn {
	t.Helper()
	u, _ := server(t)
	c, err := net.DialTimeout("tcp", strings.TrimPrefix(u, "pulsar://"), time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	_ = c.SetDeadline(time.Now().Add(2 * time.Minute))
	r := &rawConn{t: t, c: c, rd: wire.NewReader(bufio.NewReader(c), wire.DefaultMaxFrameSize)}
	r.send(&pb.BaseCommand{Type: pb.BaseCommand_CONNECT.Enum(), Connect: &pb.CommandConnect{
		ClientVersion: proto.String("compat-regression"), ProtocolVersion: proto.Int32(21)}})
	if got := r.next(); got.GetType() != pb.BaseCommand_CONNECTED {
		t.Fatalf("CONNECT answered %v", got)
	}
	return r
}

func (r *rawConn) send(cmd *pb.BaseCommand) {
	r.t.Helper()
	b, err := wire.AppendCommand(nil, cmd)
	if err != nil {
		r.t.Fatal(err)
	}
	if _, err := r.c.Write(b); err != nil {
		r.t.Fatal(err)
	}
}

// next returns the next command other than a PING (answered).
func (r *rawConn) next() *pb.BaseCommand {
	r.t.Helper()
	for {
		f, err := r.rd.ReadFrame()
		if err != nil {
			r.t.Fatal(err)
		}
		if f.Cmd.GetType() == pb.BaseCommand_PING {
			r.send(&pb.BaseCommand{Type: pb.BaseCommand_PONG.Enum(), Pong: &pb.CommandPong{}})
			continue
		}
		return f.Cmd
	}
}

// PRODUCER_SUCCESS carries schema_version even for a producer without schema (empty, as
// Pulsar sends it): the Java client reads it unconditionally, and pulsar-perf's producer
// failed with "Field 'schema_version' is not set" before this was fixed.
func TestProducerSuccessAlwaysHasSchemaVersion(t *testing.T) {
	r := dialRaw(t)
	topic := topicName(t)
	for i, ps := range []*pb.Schema{nil, {Name: proto.String("bytes"), Type: pb.Schema_None.Enum(), SchemaData: []byte{}}} {
		r.send(&pb.BaseCommand{Type: pb.BaseCommand_PRODUCER.Enum(), Producer: &pb.CommandProducer{
			Topic: proto.String(topic), ProducerId: proto.Uint64(uint64(i + 1)), RequestId: proto.Uint64(uint64(i + 1)), Schema: ps}})
		got := r.next()
		if got.GetType() != pb.BaseCommand_PRODUCER_SUCCESS {
			t.Fatalf("producer %d (schema %v): answered %v", i, ps, got)
		}
		if got.GetProducerSuccess().SchemaVersion == nil {
			t.Errorf("producer %d (schema %v): PRODUCER_SUCCESS without schema_version", i, ps)
		}
	}
}
