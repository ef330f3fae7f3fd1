package topics

import (
	"fmt"
	"maps"
	"slices"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/magnetar-io/magnetar/internal/wire"
	"github.com/magnetar-io/magnetar/internal/wire/pb"
)

// MetaOf is the dispatch metadata of an entry whose MessageMetadata the caller has decoded
// already (the Pulsar front end decodes it to validate a SEND).
func MetaOf(md *pb.MessageMetadata) EntryMeta {
	key := md.GetPartitionKey()
	if ok := md.GetOrderingKey(); len(ok) > 0 {
		key = string(ok)
	}
	return EntryMeta{
		Parsed:      true,
		Batch:       wire.IsBatch(md),
		Count:       wire.MessageCount(md),
		Key:         key,
		DeliverAt:   md.GetDeliverAtTime(),
		PublishTime: int64(md.GetPublishTime()),
		InTxn:       md.TxnidMostBits != nil && md.TxnidLeastBits != nil,
		TxnMost:     md.GetTxnidMostBits(),
		TxnLeast:    md.GetTxnidLeastBits(),
		Marker:      md.GetMarkerType(),
	}
}

// ParseEntryMeta parses the dispatch metadata of a stored entry. Unreadable metadata counts
// as one message with no key (the consumer will report and acknowledge it), so permit
// accounting always makes progress. It is the managed ledger's meta parser for entries read
// from bookies (Service.New sets it).
func ParseEntryMeta(data []byte) EntryMeta {
	e, err := wire.ParseEntry(data, false)
	if err != nil {
		return EntryMeta{Parsed: true, Count: 1}
	}
	md, err := wire.ParseMetadata(e.Metadata)
	if err != nil {
		return EntryMeta{Parsed: true, Count: 1}
	}
	return MetaOf(md)
}

// metaOf is e's dispatch metadata: what came with it, or parsed now for an entry that came
// without (a managed ledger whose factory has no parser).
func metaOf(e Entry) EntryMeta {
	if e.Meta.Parsed {
		return e.Meta
	}
	return ParseEntryMeta(e.Data)
}

// MessageSpec is a message from a front end that does not speak the Pulsar protocol (Kafka,
// functions, connectors); BuildMessage turns it into the entry Pulsar consumers read.
type MessageSpec struct {
	Payload []byte
	// Key is the routing key (Pulsar's partition_key; Key_Shared routes by it).
	Key string
	// Properties are the message's properties (Kafka headers).
	Properties map[string]string
	// EventTime is the producer's own timestamp (zero: none); PublishTime defaults to now.
	EventTime, PublishTime time.Time
	// ProducerName and SequenceID identify the message for deduplication.
	ProducerName string
	SequenceID   int64
	// DeliverAt, when not zero, delays its delivery on Shared and Key_Shared subscriptions.
	DeliverAt time.Time
}

// BuildMessage encodes spec as a Pulsar entry with its metadata, ready for Producer.Publish.
func BuildMessage(spec MessageSpec) (Message, error) {
	if spec.ProducerName == "" {
		return Message{}, fmt.Errorf("%w: a message needs a producer name", wire.ErrNotAllowed)
	}
	pt := spec.PublishTime
	if pt.IsZero() {
		pt = time.Now()
	}
	md := &pb.MessageMetadata{
		ProducerName: proto.String(spec.ProducerName),
		SequenceId:   proto.Uint64(uint64(spec.SequenceID)),
		PublishTime:  proto.Uint64(uint64(pt.UnixMilli())),
	}
	if spec.Key != "" {
		md.PartitionKey = proto.String(spec.Key)
	}
	if !spec.EventTime.IsZero() {
		md.EventTime = proto.Uint64(uint64(spec.EventTime.UnixMilli()))
	}
	if !spec.DeliverAt.IsZero() {
		md.DeliverAtTime = proto.Int64(spec.DeliverAt.UnixMilli())
	}
	for _, k := range slices.Sorted(maps.Keys(spec.Properties)) { // the same message, the same bytes
		md.Properties = append(md.Properties, &pb.KeyValue{Key: proto.String(k), Value: proto.String(spec.Properties[k])})
	}
	data, err := wire.AppendEntry(nil, md, spec.Payload)
	if err != nil {
		return Message{}, err
	}
	return Message{Data: data, Meta: MetaOf(md), SequenceID: spec.SequenceID, HighestSequenceID: spec.SequenceID}, nil
}

// msgCount is the permits an entry costs: its message count, at least 1 so that permit
// accounting always makes progress.
func msgCount(m EntryMeta) int { return max(m.Count, 1) }
