package broker

import (
	"github.com/magnetar-io/magnetar/internal/topics"
	"github.com/magnetar-io/magnetar/internal/wire/pb"
)

// handleFlow adds permits (counted in messages) to a consumer. FLOW for an unknown
// consumer is ignored: it may have been closed by the broker a moment ago.
func (c *conn) handleFlow(cmd *pb.CommandFlow) {
	if cs := c.consumer(cmd.GetConsumerId()); cs != nil {
		cs.tc.Flow(cmd.GetMessagePermits())
	}
}

// handleRedeliver releases a consumer's unacknowledged messages for redelivery (negative
// acks, ack timeouts). No reply.
func (c *conn) handleRedeliver(cmd *pb.CommandRedeliverUnacknowledgedMessages) {
	if cs := c.consumer(cmd.GetConsumerId()); cs != nil {
		var ids []topics.Position
		for _, id := range cmd.GetMessageIds() {
			ids = append(ids, position(id))
		}
		cs.tc.Redeliver(ids)
	}
}
