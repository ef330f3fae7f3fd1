package broker

import (
	"google.golang.org/protobuf/proto"

	"github.com/magnetar-io/magnetar/internal/topics"
	"github.com/magnetar-io/magnetar/internal/wire"
	"github.com/magnetar-io/magnetar/internal/wire/pb"
)

// consumer is the connection's side of one consumer: its id on the connection and the topic
// service's consumer (tc). It is tc's topics.ConsumerClient: dispatch hands it entries,
// which it queues as MESSAGE frames.
type consumer struct {
	c         *conn
	id        uint64
	partition int              // the topic's partition index, -1 if not a partition
	tc        *topics.Consumer // set before the consumer is registered on the connection
}

// Send queues a MESSAGE frame carrying a stored entry. ackSet (nil unless the entry is a
// partly acknowledged batch) has a set bit per member still to deliver.
func (cs *consumer) Send(e topics.Entry, redeliveries uint32, _ int, ackSet []int64) {
	cmd := &pb.BaseCommand{Type: pb.BaseCommand_MESSAGE.Enum(), Message: &pb.CommandMessage{
		ConsumerId:      proto.Uint64(cs.id),
		MessageId:       messageIDData(e.Position, cs.partition, -1),
		RedeliveryCount: proto.Uint32(redeliveries),
		AckSet:          ackSet,
	}}
	// Stored entries start with their broker entry metadata (topics/index.go): it goes to
	// consumers that asked for it, the others get the entry alone.
	bem, entry, err := wire.SplitHeadersAndPayload(e.Data)
	if err != nil {
		bem, entry = nil, e.Data // not ours: send it as stored, the client reports it
	}
	if !cs.c.bemSupported || !cs.c.s.cfg.ExposeBrokerEntryMetadata {
		bem = nil
	}
	cs.c.sendPayload(cmd, bem, entry)
}

// ActiveChanged tells a Failover consumer whether it is the active one.
func (cs *consumer) ActiveChanged(active bool) {
	cs.c.send(&pb.BaseCommand{Type: pb.BaseCommand_ACTIVE_CONSUMER_CHANGE.Enum(), ActiveConsumerChange: &pb.CommandActiveConsumerChange{
		ConsumerId: proto.Uint64(cs.id), IsActive: proto.Bool(active)}})
}

// Disconnect forgets the consumer on the connection and tells the client (CLOSE_CONSUMER
// without request id), which re-subscribes through a new lookup. The topic service has
// detached it already.
func (cs *consumer) Disconnect() {
	c := cs.c
	c.mu.Lock()
	if c.consumers[cs.id] != cs {
		c.mu.Unlock()
		return
	}
	delete(c.consumers, cs.id)
	c.mu.Unlock()
	c.send(&pb.BaseCommand{Type: pb.BaseCommand_CLOSE_CONSUMER.Enum(), CloseConsumer: &pb.CommandCloseConsumer{
		ConsumerId: proto.Uint64(cs.id), RequestId: proto.Uint64(wire.NoRequestID)}})
}

// Address is the client's address.
func (cs *consumer) Address() string { return cs.c.remote }

// Version is the client's CONNECT client_version (topics.ConsumerVersion, for stats).
func (cs *consumer) Version() string { return cs.c.clientVersion }

// messageIDData builds the protocol's MessageIdData for an entry of a topic (partition -1
// when it is not a partition; batchIndex -1 for none).
func messageIDData(p topics.Position, partition int, batchIndex int32) *pb.MessageIdData {
	id := &pb.MessageIdData{LedgerId: u64(p.LedgerID), EntryId: u64(p.EntryID)}
	if partition >= 0 {
		id.Partition = i32(int32(partition))
	}
	if batchIndex >= 0 {
		id.BatchIndex = i32(batchIndex)
	}
	return id
}

// position is the entry a protocol message id names.
func position(id *pb.MessageIdData) topics.Position {
	return topics.Position{LedgerID: int64(id.GetLedgerId()), EntryID: int64(id.GetEntryId())}
}
