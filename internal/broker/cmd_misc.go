package broker

import (
	"fmt"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/magnetar-io/magnetar/internal/topics"
	"github.com/magnetar-io/magnetar/internal/wire"
	"github.com/magnetar-io/magnetar/internal/wire/pb"
)

// handleGetLastMessageID answers the id of the topic's newest message (entry -1 when
// empty) with the batch index of its last message, and the subscription's mark-delete
// position.
func (c *conn) handleGetLastMessageID(cmd *pb.CommandGetLastMessageId) {
	rid := cmd.GetRequestId()
	cs := c.consumer(cmd.GetConsumerId())
	if cs == nil {
		c.sendError(rid, fmt.Errorf("%w: consumer %d", wire.ErrConsumerNotFound, cmd.GetConsumerId()))
		return
	}
	ctx, cancel := c.opContext()
	defer cancel()
	pos, bi, err := cs.tc.Topic().LastMessageID(ctx)
	if err != nil {
		c.sendError(rid, err)
		return
	}
	resp := &pb.CommandGetLastMessageIdResponse{RequestId: proto.Uint64(rid), LastMessageId: messageIDData(pos, cs.partition, bi)}
	if md, ok := cs.tc.Subscription().MarkDeletePosition(); ok {
		resp.ConsumerMarkDeletePosition = messageIDData(md, cs.partition, -1)
	}
	c.send(&pb.BaseCommand{Type: pb.BaseCommand_GET_LAST_MESSAGE_ID_RESPONSE.Enum(), GetLastMessageIdResponse: resp})
}

// handleSeek resets a subscription: its consumers are disconnected (CLOSE_CONSUMER; they
// re-subscribe and send a fresh FLOW), the cursor is moved so the message at message_id is
// the next delivered, then SUCCESS.
func (c *conn) handleSeek(cmd *pb.CommandSeek) {
	rid := cmd.GetRequestId()
	cs := c.consumer(cmd.GetConsumerId())
	if cs == nil {
		c.sendError(rid, fmt.Errorf("%w: consumer %d", wire.ErrConsumerNotFound, cmd.GetConsumerId()))
		return
	}
	ctx, cancel := c.opContext()
	defer cancel()
	var at *topics.Position
	var pt time.Time
	var target string
	switch id := cmd.GetMessageId(); {
	case id != nil:
		p := position(id)
		at, target = &p, p.String()
	case cmd.MessagePublishTime != nil:
		pt = time.UnixMilli(int64(cmd.GetMessagePublishTime()))
		target = pt.UTC().Format(time.RFC3339Nano)
	default:
		c.sendError(rid, fmt.Errorf("%w: seek without message id or publish time", wire.ErrMetadata))
		return
	}
	if err := cs.tc.Seek(ctx, at, pt); err != nil {
		c.sendError(rid, fmt.Errorf("seek %s to %s: %w", cs.tc.Subscription().Name(), target, err))
		return
	}
	c.sendSuccess(rid)
}

// handleConsumerStats answers with what a connection knows about the consumer.
func (c *conn) handleConsumerStats(cmd *pb.CommandConsumerStats) {
	resp := &pb.CommandConsumerStatsResponse{RequestId: proto.Uint64(cmd.GetRequestId())}
	if cs := c.consumer(cmd.GetConsumerId()); cs != nil {
		resp.ConsumerName = proto.String(cs.tc.Name())
		resp.AvailablePermits = proto.Uint64(uint64(cs.tc.Permits()))
		resp.Type = proto.String(cs.tc.Subscription().Type().String())
		resp.Address = proto.String(c.remote)
	} else {
		resp.ErrorCode = pb.ServerError_ConsumerNotFound.Enum()
		resp.ErrorMessage = proto.String("consumer not found")
	}
	c.send(&pb.BaseCommand{Type: pb.BaseCommand_CONSUMER_STATS_RESPONSE.Enum(), ConsumerStatsResponse: resp})
}
