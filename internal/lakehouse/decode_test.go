package lakehouse

import (
	"errors"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/magnetar-io/magnetar/internal/wire"
	"github.com/magnetar-io/magnetar/internal/wire/pb"
)

// testEntry is a stored entry: a batch of n messages with keys and properties when n > 0,
// a single message otherwise.
func testEntry(t testing.TB, n int) []byte {
	t.Helper()
	md := &pb.MessageMetadata{ProducerName: proto.String("p"), SequenceId: proto.Uint64(7), PublishTime: proto.Uint64(1700000000000),
		SchemaVersion: []byte{0, 0, 0, 0, 0, 0, 0, 1}}
	var body []byte
	if n == 0 {
		md.PartitionKey = proto.String("k")
		md.Properties = []*pb.KeyValue{{Key: proto.String("a"), Value: proto.String("b")}}
		body = []byte("payload")
	} else {
		md.NumMessagesInBatch = proto.Int32(int32(n))
		for i := range n {
			smm := &pb.SingleMessageMetadata{PayloadSize: proto.Int32(2), PartitionKey: proto.String("k"), SequenceId: proto.Uint64(uint64(i)),
				Properties: []*pb.KeyValue{{Key: proto.String("i"), Value: proto.String("x")}}}
			var err error
			if body, err = wire.AppendBatchMessage(body, smm, []byte{'m', byte('0' + i)}); err != nil {
				t.Fatal(err)
			}
		}
	}
	e, err := wire.AppendEntry(nil, md, body)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func TestEntryDecoder(t *testing.T) {
	var d entryDecoder
	md, msgs, err := d.decode(testEntry(t, 0))
	if err != nil || len(msgs) != 1 || string(msgs[0].payload) != "payload" || msgs[0].key != "k" || msgs[0].batchIndex != -1 || md.GetSequenceId() != 7 {
		t.Fatalf("single: %v %+v", err, msgs)
	}
	_, msgs, err = d.decode(testEntry(t, 3))
	if err != nil || len(msgs) != 3 {
		t.Fatalf("batch: %v %d", err, len(msgs))
	}
	for i, m := range msgs {
		if m.batchIndex != int32(i) || string(m.payload) != "m"+string(rune('0'+i)) || len(m.props) != 1 || m.sequenceID != uint64(i) {
			t.Fatalf("batch message %d: %+v", i, m)
		}
	}
	if _, _, err := d.decode([]byte{0x0e, 0x01, 0, 0}); !errors.Is(err, errUnconvertible) {
		t.Fatalf("corrupt entry: %v, want errUnconvertible", err)
	}
}

// FuzzEntryDecode: any stored bytes decode or fail with errUnconvertible, never panic, and
// every message's payload lies within bounds the decoder was given or produced.
func FuzzEntryDecode(f *testing.F) {
	f.Add(testEntry(f, 0))
	f.Add(testEntry(f, 3))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		var d entryDecoder
		_, msgs, err := d.decode(data)
		if err != nil {
			if !errors.Is(err, errUnconvertible) {
				t.Fatalf("error %v does not wrap errUnconvertible", err)
			}
			return
		}
		for _, m := range msgs {
			if len(m.payload) > len(data)+maxUncompressed {
				t.Fatalf("payload of %d bytes from %d", len(m.payload), len(data))
			}
		}
	})
}
