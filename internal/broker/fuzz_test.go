package broker

import (
	"io"
	"net"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/magnetar-io/magnetar/internal/wire"
	"github.com/magnetar-io/magnetar/internal/wire/pb"
)

// FuzzConnection feeds arbitrary bytes, after a valid CONNECT, into a live broker
// connection: whatever arrives, the broker must not panic, and the connection must end when
// the client goes away. Seeds are valid command sequences covering every handler.
func FuzzConnection(f *testing.F) {
	frames := func(cmds ...*pb.BaseCommand) []byte {
		var out []byte
		for _, c := range cmds {
			var err error
			if c.GetType() == pb.BaseCommand_SEND {
				entry, _ := wire.AppendEntry(nil, &pb.MessageMetadata{ProducerName: proto.String("p"),
					SequenceId: proto.Uint64(0), PublishTime: proto.Uint64(1)}, []byte("hello"))
				out, err = wire.AppendPayloadCommand(out, c, nil, entry)
			} else {
				out, err = wire.AppendCommand(out, c)
			}
			if err != nil {
				f.Fatal(err)
			}
		}
		return out
	}
	u := proto.Uint64
	topic := proto.String("persistent://public/default/fuzz")
	id := func() *pb.MessageIdData { return &pb.MessageIdData{LedgerId: u(1), EntryId: u(0)} }
	f.Add(frames(
		&pb.BaseCommand{Type: pb.BaseCommand_PRODUCER.Enum(), Producer: &pb.CommandProducer{Topic: topic, ProducerId: u(1), RequestId: u(1)}},
		&pb.BaseCommand{Type: pb.BaseCommand_SEND.Enum(), Send: &pb.CommandSend{ProducerId: u(1), SequenceId: u(0)}},
		&pb.BaseCommand{Type: pb.BaseCommand_CLOSE_PRODUCER.Enum(), CloseProducer: &pb.CommandCloseProducer{ProducerId: u(1), RequestId: u(2)}},
	))
	f.Add(frames(
		&pb.BaseCommand{Type: pb.BaseCommand_SUBSCRIBE.Enum(), Subscribe: &pb.CommandSubscribe{Topic: topic, Subscription: proto.String("s"),
			SubType: pb.CommandSubscribe_Shared.Enum(), ConsumerId: u(1), RequestId: u(3),
			InitialPosition: pb.CommandSubscribe_Earliest.Enum()}},
		&pb.BaseCommand{Type: pb.BaseCommand_FLOW.Enum(), Flow: &pb.CommandFlow{ConsumerId: u(1), MessagePermits: proto.Uint32(10)}},
		&pb.BaseCommand{Type: pb.BaseCommand_ACK.Enum(), Ack: &pb.CommandAck{ConsumerId: u(1), AckType: pb.CommandAck_Individual.Enum(),
			MessageId: []*pb.MessageIdData{id()}, RequestId: u(4)}},
		&pb.BaseCommand{Type: pb.BaseCommand_REDELIVER_UNACKNOWLEDGED_MESSAGES.Enum(),
			RedeliverUnacknowledgedMessages: &pb.CommandRedeliverUnacknowledgedMessages{ConsumerId: u(1)}},
		&pb.BaseCommand{Type: pb.BaseCommand_GET_LAST_MESSAGE_ID.Enum(), GetLastMessageId: &pb.CommandGetLastMessageId{ConsumerId: u(1), RequestId: u(5)}},
		&pb.BaseCommand{Type: pb.BaseCommand_SEEK.Enum(), Seek: &pb.CommandSeek{ConsumerId: u(1), RequestId: u(6), MessageId: id()}},
		&pb.BaseCommand{Type: pb.BaseCommand_UNSUBSCRIBE.Enum(), Unsubscribe: &pb.CommandUnsubscribe{ConsumerId: u(1), RequestId: u(7)}},
		&pb.BaseCommand{Type: pb.BaseCommand_CLOSE_CONSUMER.Enum(), CloseConsumer: &pb.CommandCloseConsumer{ConsumerId: u(1), RequestId: u(8)}},
	))
	f.Add(frames(
		&pb.BaseCommand{Type: pb.BaseCommand_LOOKUP.Enum(), LookupTopic: &pb.CommandLookupTopic{Topic: topic, RequestId: u(1)}},
		&pb.BaseCommand{Type: pb.BaseCommand_PARTITIONED_METADATA.Enum(), PartitionMetadata: &pb.CommandPartitionedTopicMetadata{Topic: proto.String("bad//name"), RequestId: u(2)}},
		&pb.BaseCommand{Type: pb.BaseCommand_GET_TOPICS_OF_NAMESPACE.Enum(), GetTopicsOfNamespace: &pb.CommandGetTopicsOfNamespace{RequestId: u(3), Namespace: proto.String("public/default")}},
		&pb.BaseCommand{Type: pb.BaseCommand_NEW_TXN.Enum(), NewTxn: &pb.CommandNewTxn{RequestId: u(4)}},
		&pb.BaseCommand{Type: pb.BaseCommand_PING.Enum(), Ping: &pb.CommandPing{}},
	))
	f.Add([]byte{0, 0, 0, 6, 0, 0, 0, 2, 8, 4})
	b := startBrokerOn(f, false, nil)
	connect, _ := wire.AppendCommand(nil, &pb.BaseCommand{Type: pb.BaseCommand_CONNECT.Enum(),
		Connect: &pb.CommandConnect{ClientVersion: proto.String("fuzz")}})
	f.Fuzz(func(t *testing.T, in []byte) {
		client, server := net.Pipe()
		done := make(chan struct{})
		go func() { _, _ = io.Copy(io.Discard, client); close(done) }()
		b.s.accept(server)
		_, _ = client.Write(connect)
		_, _ = client.Write(in)
		_ = client.Close()
		<-done
	})
}
