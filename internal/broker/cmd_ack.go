package broker

import (
	"fmt"

	"google.golang.org/protobuf/proto"

	"github.com/magnetar-io/magnetar/internal/wire"
	"github.com/magnetar-io/magnetar/internal/wire/pb"
)

// handleAck applies individual or cumulative acknowledgements and answers ACK_RESPONSE
// when the client set request_id.
func (c *conn) handleAck(cmd *pb.CommandAck) {
	cs := c.consumer(cmd.GetConsumerId())
	ctx, cancel := c.opContext()
	defer cancel()
	var err error
	switch {
	case cs == nil:
		err = fmt.Errorf("%w: consumer %d", wire.ErrConsumerNotFound, cmd.GetConsumerId())
	case cmd.ValidationError != nil:
		c.log.Warn("consumer reports a corrupt message; acknowledging it", "subscription", cs.sub.name,
			"error", cmd.GetValidationError().String())
		fallthrough
	case cmd.GetAckType() == pb.CommandAck_Individual:
		if cs != nil {
			err = cs.sub.ackIndividual(ctx, cmd.GetMessageId())
		}
	default:
		ids := cmd.GetMessageId()
		switch {
		case len(ids) != 1:
			err = fmt.Errorf("%w: cumulative ack with %d ids", wire.ErrNotAllowed, len(ids))
		case cs.sub.typ == pb.CommandSubscribe_Shared:
			err = fmt.Errorf("%w: cumulative ack on a Shared subscription", wire.ErrNotAllowed)
		default:
			err = cs.sub.ackCumulative(ctx, ids[0])
		}
	}
	if err != nil {
		c.log.Debug("ack failed", "err", err)
	}
	if cmd.RequestId == nil {
		return
	}
	resp := &pb.CommandAckResponse{ConsumerId: proto.Uint64(cmd.GetConsumerId()), RequestId: proto.Uint64(cmd.GetRequestId())}
	if err != nil {
		code, _ := wire.ServerErrorFor(err)
		resp.Error, resp.Message = code.Enum(), proto.String(err.Error())
	}
	c.send(&pb.BaseCommand{Type: pb.BaseCommand_ACK_RESPONSE.Enum(), AckResponse: resp})
}
