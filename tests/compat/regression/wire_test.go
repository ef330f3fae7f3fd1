package regression

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
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

// TestTopicTermination is the broker's side of the Go client's TestTopicTermination, on the
// wire: SENDs in flight when a topic is terminated are acknowledged in order or left to the
// producer's close, never answered SEND_ERROR (the Go client drops a producer on SEND_ERROR
// TopicTerminated and its pending sends then time out, the client's test failing about one
// run in three); the producer gets CLOSE_PRODUCER, and a new PRODUCER is refused with
// TopicTerminatedError. It is not driven through the Go client itself: v0.19.0 closes a
// producer's send channel while Send may be writing to it (a data race under -race, and a
// Send that never returns), whatever the broker answers.
func TestTopicTermination(t *testing.T) {
	for round := 0; round < 5; round++ {
		r := dialRaw(t)
		topic := topicName(t)
		r.send(&pb.BaseCommand{Type: pb.BaseCommand_PRODUCER.Enum(), Producer: &pb.CommandProducer{
			Topic: proto.String(topic), ProducerId: proto.Uint64(1), RequestId: proto.Uint64(1)}})
		if got := r.next(); got.GetType() != pb.BaseCommand_PRODUCER_SUCCESS {
			t.Fatalf("round %d: PRODUCER answered %v", round, got)
		}
		// A writer keeps SENDs flowing while the topic is terminated; it stops once the
		// producer is closed (or after 20,000, far more than the broker acks meanwhile).
		stop := make(chan struct{})
		wrote := make(chan error, 1)
		go func() {
			for seq := uint64(0); seq < 20000; seq++ {
				select {
				case <-stop:
					wrote <- nil
					return
				default:
				}
				entry, err := wire.AppendEntry(nil, &pb.MessageMetadata{ProducerName: proto.String("term"),
					SequenceId: proto.Uint64(seq), PublishTime: proto.Uint64(uint64(time.Now().UnixMilli()))}, make([]byte, 1024))
				if err == nil {
					var b []byte
					b, err = wire.AppendPayloadCommand(nil, &pb.BaseCommand{Type: pb.BaseCommand_SEND.Enum(), Send: &pb.CommandSend{
						ProducerId: proto.Uint64(1), SequenceId: proto.Uint64(seq)}}, nil, entry)
					if err == nil {
						_, err = r.c.Write(b)
					}
				}
				if err != nil {
					wrote <- err
					return
				}
				if seq%64 == 63 {
					time.Sleep(time.Millisecond) // a steady stream, not one burst before the terminate
				}
			}
			wrote <- nil
		}()
		time.Sleep(50 * time.Millisecond)
		// The terminate runs beside the reads (its answer may wait on them); it reports on a
		// channel, never through t, as the test may already have failed.
		terminated := make(chan error, 1)
		_, admin := server(t)
		go func() {
			resp, err := http.Post(admin+"/admin/v2/persistent/"+strings.TrimPrefix(topic, "persistent://")+"/terminate", "application/json", nil)
			if err == nil {
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK && resp.StatusCode != http.StatusNoContent {
					err = fmt.Errorf("terminate: %s", resp.Status)
				}
			}
			terminated <- err
		}()
		acked := int64(-1)
		for closed := false; !closed; {
			cmd := r.next()
			switch cmd.GetType() {
			case pb.BaseCommand_SEND_RECEIPT:
				if seq := int64(cmd.GetSendReceipt().GetSequenceId()); seq <= acked {
					t.Fatalf("round %d: receipt for %d after %d", round, seq, acked)
				} else {
					acked = seq
				}
			case pb.BaseCommand_CLOSE_PRODUCER:
				closed = true
			default:
				t.Fatalf("round %d: before the producer was closed the broker sent %v (after acking up to %d)", round, cmd, acked)
			}
		}
		close(stop)
		if err := <-wrote; err != nil {
			t.Fatalf("round %d: writing SENDs: %v", round, err)
		}
		if err := <-terminated; err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		// SENDs still on the wire for the closed producer are refused; then the new PRODUCER.
		r.send(&pb.BaseCommand{Type: pb.BaseCommand_PRODUCER.Enum(), Producer: &pb.CommandProducer{
			Topic: proto.String(topic), ProducerId: proto.Uint64(2), RequestId: proto.Uint64(2)}})
		for {
			cmd := r.next()
			if cmd.GetType() == pb.BaseCommand_SEND_ERROR && cmd.GetSendError().GetProducerId() == 1 {
				continue
			}
			if cmd.GetType() != pb.BaseCommand_ERROR || cmd.GetError().GetError() != pb.ServerError_TopicTerminatedError {
				t.Fatalf("round %d: PRODUCER on the terminated topic answered %v", round, cmd)
			}
			break
		}
	}
}
