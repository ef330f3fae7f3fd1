package broker

import (
	"fmt"

	"google.golang.org/protobuf/proto"

	"github.com/magnetar-io/magnetar/internal/topics"
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
	default:
		if cmd.ValidationError != nil {
			c.log.Warn("consumer reports a corrupt message; acknowledging it", "subscription", cs.tc.Subscription().Name(),
				"error", cmd.GetValidationError().String())
		}
		ids := make([]topics.AckID, len(cmd.GetMessageId()))
		for i, id := range cmd.GetMessageId() {
			ids[i] = topics.AckID{Position: position(id), AckSet: id.GetAckSet()}
		}
		// A consumer reporting a corrupt message acknowledges it individually.
		cumulative := cmd.GetAckType() == pb.CommandAck_Cumulative && cmd.ValidationError == nil
		var tx *topics.TxnID
		if cmd.TxnidMostBits != nil || cmd.TxnidLeastBits != nil {
			tx = &topics.TxnID{Most: cmd.GetTxnidMostBits(), Least: cmd.GetTxnidLeastBits()}
		}
		err = cs.tc.AckTxn(ctx, ids, cumulative, tx)
	}
	if err != nil {
		c.log.Debug("ack failed", "err", err)
	}
	if cmd.RequestId == nil {
		return
	}
	resp := &pb.CommandAckResponse{ConsumerId: proto.Uint64(cmd.GetConsumerId()), RequestId: proto.Uint64(cmd.GetRequestId()),
		TxnidMostBits: cmd.TxnidMostBits, TxnidLeastBits: cmd.TxnidLeastBits}
	if err != nil {
		code, _ := wire.ServerErrorFor(err)
		resp.Error, resp.Message = code.Enum(), proto.String(err.Error())
	}
	c.send(&pb.BaseCommand{Type: pb.BaseCommand_ACK_RESPONSE.Enum(), AckResponse: resp})
}
