package broker

import (
	"fmt"

	"github.com/magnetar-io/magnetar/internal/topics"
	"github.com/magnetar-io/magnetar/internal/wire"
	"github.com/magnetar-io/magnetar/internal/wire/pb"
)

// handleSubscribe attaches a consumer (SUBSCRIBE -> SUCCESS or ERROR); the client then
// sends FLOW.
func (c *conn) handleSubscribe(cmd *pb.CommandSubscribe) {
	rid, cid := cmd.GetRequestId(), cmd.GetConsumerId()
	c.mu.Lock()
	_, exists := c.consumers[cid]
	limitErr := c.connLimit(len(c.consumers), c.s.cfg.MaxConsumersPerConnection, "maxConsumersPerConnection", wire.ErrConsumerBusy)
	c.mu.Unlock()
	if exists {
		c.sendSuccess(rid)
		return
	}
	if limitErr != nil {
		c.sendError(rid, limitErr)
		return
	}
	name, err := topics.ParseName(cmd.GetTopic())
	if err != nil {
		c.sendError(rid, err)
		return
	}
	if cmd.GetSubscription() == "" {
		c.sendError(rid, fmt.Errorf("%w: empty subscription name", wire.ErrNotAllowed))
		return
	}
	ctx, cancel := c.opContext()
	defer cancel()
	t, err := c.s.topics.Topic(ctx, name, topics.Load{Create: cmd.GetForceTopicCreation()})
	if err != nil {
		c.sendError(rid, err)
		return
	}
	if err := t.ConsumerSchema(ctx, schemaFromWire(cmd.GetSchema())); err != nil {
		c.sendError(rid, err)
		return
	}
	cs := &consumer{c: c, id: cid, partition: name.Partition}
	tc, err := t.Subscribe(ctx, consumerSpec(cmd), cs)
	if err != nil {
		c.sendError(rid, err)
		return
	}
	cs.tc = tc
	c.mu.Lock()
	if c.isClosed() {
		c.mu.Unlock()
		tc.Close()
		return
	}
	c.consumers[cid] = cs
	c.mu.Unlock()
	c.log.Debug("consumer subscribed", "topic", name.String(), "subscription", cmd.GetSubscription(), "type", cmd.GetSubType().String(), "id", cid)
	c.sendSuccess(rid)
}

// consumerSpec is what SUBSCRIBE asks of the topic service.
func consumerSpec(cmd *pb.CommandSubscribe) topics.ConsumerSpec {
	spec := topics.ConsumerSpec{
		ID: cmd.GetConsumerId(), Name: cmd.GetConsumerName(), Priority: cmd.GetPriorityLevel(),
		Subscription: cmd.GetSubscription(), Type: topics.SubType(cmd.GetSubType()), Durable: cmd.GetDurable(),
		InitialEarliest: cmd.GetInitialPosition() == pb.CommandSubscribe_Earliest,
		Metadata:        keyValues(cmd.GetMetadata()),
		ReadCompacted:   cmd.GetReadCompacted(),
	}
	// A reader starts at start_message_id: the entry there is delivered first (the client
	// drops it itself when the start is exclusive).
	if id := cmd.GetStartMessageId(); id != nil {
		p := position(id)
		spec.Start = &p
	}
	if ks := cmd.GetKeySharedMeta(); ks != nil {
		pol := &topics.KeySharedPolicy{Mode: topics.KeySharedMode(ks.GetKeySharedMode()), AllowOutOfOrder: ks.GetAllowOutOfOrderDelivery()}
		for _, r := range ks.GetHashRanges() {
			pol.Ranges = append(pol.Ranges, topics.HashRange{Start: r.GetStart(), End: r.GetEnd()})
		}
		spec.KeyShared = pol
	}
	return spec
}

// handleCloseConsumer detaches a consumer; its unacknowledged messages are redelivered to
// the subscription's other consumers (or the next one). Unknown ids succeed too.
func (c *conn) handleCloseConsumer(cmd *pb.CommandCloseConsumer) {
	c.mu.Lock()
	cs, ok := c.consumers[cmd.GetConsumerId()]
	delete(c.consumers, cmd.GetConsumerId())
	c.mu.Unlock()
	if ok {
		cs.tc.Close()
	}
	c.sendSuccess(cmd.GetRequestId())
}

// handleUnsubscribe deletes the subscription if the consumer is its only one (or force).
func (c *conn) handleUnsubscribe(cmd *pb.CommandUnsubscribe) {
	rid := cmd.GetRequestId()
	cs := c.consumer(cmd.GetConsumerId())
	if cs == nil {
		c.sendError(rid, fmt.Errorf("%w: consumer %d", wire.ErrConsumerNotFound, cmd.GetConsumerId()))
		return
	}
	ctx, cancel := c.opContext()
	defer cancel()
	if err := cs.tc.Unsubscribe(ctx, cmd.GetForce()); err != nil {
		c.sendError(rid, err)
		return
	}
	c.mu.Lock()
	delete(c.consumers, cs.id)
	c.mu.Unlock()
	c.sendSuccess(rid)
}

func (c *conn) consumer(id uint64) *consumer {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.consumers[id]
}
