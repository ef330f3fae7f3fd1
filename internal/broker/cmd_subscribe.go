package broker

import (
	"context"
	"fmt"

	"github.com/magnetar-io/magnetar/internal/wire"
	"github.com/magnetar-io/magnetar/internal/wire/pb"
	"google.golang.org/protobuf/proto"
)

// handleSubscribe attaches a consumer (SUBSCRIBE -> SUCCESS or ERROR); the client then
// sends FLOW.
func (c *conn) handleSubscribe(cmd *pb.CommandSubscribe) {
	rid, cid := cmd.GetRequestId(), cmd.GetConsumerId()
	c.mu.Lock()
	_, exists := c.consumers[cid]
	c.mu.Unlock()
	if exists {
		c.sendSuccess(rid)
		return
	}
	name, err := ParseTopicName(cmd.GetTopic())
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
	t, err := c.s.getTopic(ctx, name, cmd.GetForceTopicCreation())
	if err != nil {
		c.sendError(rid, err)
		return
	}
	if err := c.consumerSchema(ctx, t, cmd.GetSchema()); err != nil {
		c.sendError(rid, err)
		return
	}
	cs := &consumer{c: c, id: cid, name: cmd.GetConsumerName(), priority: cmd.GetPriorityLevel()}
	sub, err := t.subscribe(ctx, cmd, cs)
	if err != nil {
		c.sendError(rid, err)
		return
	}
	c.mu.Lock()
	if c.isClosed() {
		c.mu.Unlock()
		sub.removeConsumer(cs)
		return
	}
	c.consumers[cid] = cs
	c.mu.Unlock()
	c.log.Debug("consumer subscribed", "topic", t.full, "subscription", sub.name, "type", cmd.GetSubType().String(), "id", cid)
	c.sendSuccess(rid)
}

// subscribe attaches cs to the named subscription, creating it (and, for persistent
// topics, its cursor) if needed.
func (t *topic) subscribe(ctx context.Context, cmd *pb.CommandSubscribe, cs *consumer) (*subscription, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return nil, fmt.Errorf("%w: topic %s is closing", wire.ErrServiceNotReady, t.full)
	}
	name := cmd.GetSubscription()
	if err := t.admitConsumerLocked(name); err != nil {
		return nil, err
	}
	sub := t.subs[name]
	if sub == nil {
		var cur logCursor
		durable := cmd.GetDurable()
		if t.log != nil {
			var err error
			if durable {
				cur, err = t.log.openCursor(ctx, name, cmd.GetInitialPosition() == pb.CommandSubscribe_Earliest)
			} else {
				cur, err = t.log.newReader(ctx, readerStart(cmd))
			}
			if err != nil {
				return nil, fmt.Errorf("%w: open cursor %s on %s: %w", wire.ErrPersistence, name, t.full, err)
			}
		}
		sub = newSubscription(t, name, cmd.GetSubType(), durable, cur)
		t.subs[name] = sub
	}
	cs.sub = sub
	if err := sub.addConsumer(cs, cmd.GetSubType(), cmd.GetKeySharedMeta()); err != nil {
		return nil, err
	}
	return sub, nil
}

// readerStart is where a non-durable subscription starts: the entry at start_message_id
// is delivered first (the client drops it itself when the start is exclusive); without
// one, the initial position.
func readerStart(cmd *pb.CommandSubscribe) position {
	if id := cmd.GetStartMessageId(); id != nil {
		return position{int64(id.GetLedgerId()), int64(id.GetEntryId())}
	}
	if cmd.GetInitialPosition() == pb.CommandSubscribe_Earliest {
		return earliest
	}
	return latest
}

func (t *topic) removeSubscription(s *subscription) {
	t.mu.Lock()
	if t.subs[s.name] == s {
		delete(t.subs, s.name)
	}
	t.mu.Unlock()
}

// handleCloseConsumer detaches a consumer; its unacknowledged messages are redelivered to
// the subscription's other consumers (or the next one). Unknown ids succeed too.
func (c *conn) handleCloseConsumer(cmd *pb.CommandCloseConsumer) {
	c.mu.Lock()
	cs, ok := c.consumers[cmd.GetConsumerId()]
	delete(c.consumers, cmd.GetConsumerId())
	c.mu.Unlock()
	if ok {
		cs.sub.removeConsumer(cs)
	}
	c.sendSuccess(cmd.GetRequestId())
}

// closeConsumerFromBroker detaches cs and tells the client (CLOSE_CONSUMER without request
// id), which re-subscribes through a new lookup.
func (c *conn) closeConsumerFromBroker(cs *consumer) {
	c.mu.Lock()
	if c.consumers[cs.id] != cs {
		c.mu.Unlock()
		return
	}
	delete(c.consumers, cs.id)
	c.mu.Unlock()
	cs.sub.removeConsumer(cs)
	c.send(&pb.BaseCommand{Type: pb.BaseCommand_CLOSE_CONSUMER.Enum(), CloseConsumer: &pb.CommandCloseConsumer{
		ConsumerId: proto.Uint64(cs.id), RequestId: proto.Uint64(wire.NoRequestID)}})
}

// handleUnsubscribe deletes the subscription if cs is its only consumer (or force).
func (c *conn) handleUnsubscribe(cmd *pb.CommandUnsubscribe) {
	rid := cmd.GetRequestId()
	cs := c.consumer(cmd.GetConsumerId())
	if cs == nil {
		c.sendError(rid, fmt.Errorf("%w: consumer %d", wire.ErrConsumerNotFound, cmd.GetConsumerId()))
		return
	}
	sub := cs.sub
	others := 0
	for _, x := range sub.consumersSnapshot() {
		if x != cs {
			others++
		}
	}
	if others > 0 && !cmd.GetForce() {
		c.sendError(rid, fmt.Errorf("%w: subscription %s has other consumers", wire.ErrMetadata, sub.name))
		return
	}
	for _, x := range sub.consumersSnapshot() {
		if x != cs {
			x.c.closeConsumerFromBroker(x)
		}
	}
	c.mu.Lock()
	delete(c.consumers, cs.id)
	c.mu.Unlock()
	t := sub.t
	t.removeSubscription(sub)
	sub.removeConsumer(cs)
	sub.stop()
	if sub.durable && t.log != nil {
		ctx, cancel := c.opContext()
		defer cancel()
		if err := t.log.deleteCursor(ctx, sub.name); err != nil {
			c.sendError(rid, fmt.Errorf("%w: delete subscription %s: %w", wire.ErrPersistence, sub.name, err))
			return
		}
	}
	c.sendSuccess(rid)
}

func (c *conn) consumer(id uint64) *consumer {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.consumers[id]
}
