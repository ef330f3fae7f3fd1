package topics

import (
	"context"
	"fmt"
	"time"

	"github.com/magnetar-io/magnetar/internal/wire"
)

// Subscribe attaches a consumer to the subscription spec names, creating the subscription
// (and, for persistent topics, its cursor) if needed. The consumer receives nothing until
// it has permits (Consumer.Flow).
func (t *Topic) Subscribe(ctx context.Context, spec ConsumerSpec, client ConsumerClient) (*Consumer, error) {
	if err := t.s.authorizeSub(ctx, ActionConsume, t.name, spec.Subscription); err != nil {
		return nil, err
	}
	if spec.Subscription == "" {
		return nil, fmt.Errorf("%w: empty subscription name", wire.ErrNotAllowed)
	}
	cs := &Consumer{client: client, id: spec.ID, name: spec.Name, priority: spec.Priority, principal: PrincipalFrom(ctx),
		metadata: spec.Metadata}
	cs.wr, _ = client.(ConsumerWritability)
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return nil, fmt.Errorf("%w: topic %s is closing", wire.ErrServiceNotReady, t.full)
	}
	name := spec.Subscription
	if err := t.admitConsumerLocked(name); err != nil {
		return nil, err
	}
	if err := t.checkReadCompacted(spec); err != nil { // compaction_read.go
		return nil, err
	}
	sub := t.subs[name]
	if sub == nil {
		var cur *logCursor
		existed := false
		if t.log != nil {
			var err error
			if spec.Durable && !t.autoSubscriptionAllowed() {
				if _, ok := t.log.ml.Cursor(name); !ok {
					return nil, fmt.Errorf("%w: subscription %s does not exist on %s and allowAutoSubscriptionCreation is false",
						wire.ErrSubscriptionNotFound, name, t.full)
				}
			}
			_, existed = t.log.ml.Cursor(name)
			if spec.Durable {
				cur, err = t.log.openCursor(ctx, name, spec.InitialEarliest)
			} else {
				cur, err = t.log.newReader(readerStart(spec))
			}
			if err != nil {
				return nil, fmt.Errorf("%w: open cursor %s on %s: %w", wire.ErrPersistence, name, t.full, err)
			}
		}
		sub = newSubscription(t, name, spec.Type, spec.Durable, cur)
		if spec.ReadCompacted {
			sub.cmp = newCompactedRead(spec, cur, !existed)
		}
		if err := t.attachTxnLocked(ctx, sub); err != nil { // txn.go
			return nil, err
		}
		t.subs[name] = sub
	}
	cs.sub = sub
	if err := sub.addConsumer(cs, spec.Type, spec.KeyShared); err != nil {
		return nil, err
	}
	return cs, nil
}

// autoSubscriptionAllowed tells whether a durable subscription may be created by its first
// consumer: the topic's autoSubscriptionCreation policy, else the broker's dynamic
// allowAutoSubscriptionCreation.
func (t *Topic) autoSubscriptionAllowed() bool {
	if v := t.pol.get().autoSubscription; v != nil {
		return *v
	}
	return t.s.dyn.autoSub.Load()
}

// readerStart is where a non-durable subscription starts: the entry at Start is delivered
// first (the Pulsar client drops it itself when the start is exclusive); without one, the
// initial position.
func readerStart(spec ConsumerSpec) Position {
	if spec.Start != nil {
		return *spec.Start
	}
	if spec.InitialEarliest {
		return Earliest
	}
	return Latest
}

func (t *Topic) removeSubscription(s *Subscription) {
	t.mu.Lock()
	if t.subs[s.name] == s {
		delete(t.subs, s.name)
	}
	t.mu.Unlock()
}

// disconnect detaches cs (its unacknowledged messages go to the others) and tells its client
// the broker closed it.
func (s *Subscription) disconnect(cs *Consumer) {
	s.removeConsumer(cs)
	cs.client.Disconnect()
}

// ID is the front end's id of the consumer (ConsumerSpec.ID).
func (c *Consumer) ID() uint64 { return c.id }

// Name is the consumer's name.
func (c *Consumer) Name() string { return c.name }

// Subscription is the consumer's subscription.
func (c *Consumer) Subscription() *Subscription { return c.sub }

// Topic is the consumer's topic.
func (c *Consumer) Topic() *Topic { return c.sub.t }

// Permits is the consumer's available permits (messages it may still be sent), never
// negative.
func (c *Consumer) Permits() int {
	c.sub.mu.Lock()
	defer c.sub.mu.Unlock()
	return max(c.permits, 0)
}

// Resume tells the dispatcher that the consumer's client reads again (its
// ConsumerWritability turned true), so entries held back for it go out.
func (c *Consumer) Resume() { c.sub.poke() }

func (c *Consumer) writable() bool { return c.wr == nil || c.wr.Writable() }

// Flow gives the consumer n more permits (counted in messages).
func (c *Consumer) Flow(n uint32) {
	c.lastFlow.Store(time.Now().UnixMilli())
	c.sub.flow(c, n)
}

// Ack acknowledges entries: each one individually, or, when cumulative, everything up to
// and including the one id (not on Shared subscriptions). An id with a partial AckSet
// acknowledges members of a batch only.
func (c *Consumer) Ack(ctx context.Context, ids []AckID, cumulative bool) error {
	return c.AckTxn(ctx, ids, cumulative, nil)
}

// AckTxn is Ack within a transaction when txn is not nil (Options.Transactions).
func (c *Consumer) AckTxn(ctx context.Context, ids []AckID, cumulative bool, txn *TxnID) error {
	if txn != nil {
		return c.ackTxn(ctx, ids, cumulative, *txn) // txn.go
	}
	if !cumulative {
		return c.sub.ackIndividual(ctx, ids)
	}
	switch {
	case len(ids) != 1:
		return fmt.Errorf("%w: cumulative ack with %d ids", wire.ErrNotAllowed, len(ids))
	case c.sub.Type() == Shared:
		return fmt.Errorf("%w: cumulative ack on a Shared subscription", wire.ErrNotAllowed)
	}
	return c.sub.ackCumulative(ctx, ids[0])
}

// Redeliver releases the consumer's unacknowledged entries for redelivery (negative acks,
// ack timeouts): only those in ids on Shared and Key_Shared subscriptions when ids is not
// empty; Exclusive and Failover rewind over all of them to keep order, as Pulsar does.
func (c *Consumer) Redeliver(ids []Position) { c.sub.redeliver(c, ids) }

// Close detaches the consumer; its unacknowledged messages are redelivered to the
// subscription's other consumers (or the next one). A non-durable subscription ends with
// its last consumer.
func (c *Consumer) Close() { c.sub.removeConsumer(c) }

// Unsubscribe deletes the consumer's subscription (and its cursor) if the consumer is its
// only one, or, with force, after disconnecting the others.
func (c *Consumer) Unsubscribe(ctx context.Context, force bool) error {
	sub := c.sub
	others := 0
	for _, x := range sub.consumersSnapshot() {
		if x != c {
			others++
		}
	}
	if others > 0 && !force {
		return fmt.Errorf("%w: subscription %s has other consumers", wire.ErrMetadata, sub.name)
	}
	for _, x := range sub.consumersSnapshot() {
		if x != c {
			sub.disconnect(x)
		}
	}
	t := sub.t
	t.removeSubscription(sub)
	sub.removeConsumer(c)
	sub.stop()
	if sub.durable && t.log != nil {
		if err := t.log.deleteCursor(ctx, sub.name); err != nil {
			return fmt.Errorf("%w: delete subscription %s: %w", wire.ErrPersistence, sub.name, err)
		}
	}
	return nil
}

// seekReattachWindow is how long a non-durable subscription (a reader) waits after a seek
// for a consumer to subscribe again before it ends, as it ends with its last consumer.
const seekReattachWindow = time.Minute

// Seek resets the consumer's subscription so that the next message delivered is the one at
// at or, when at is nil, the first published at or after publishTime. Its consumers (this
// one included) are disconnected first; they subscribe again and get permits afresh. A
// non-durable subscription is kept across the reset, as Pulsar keeps it
// (removeConsumer(consumer, isResetCursor)): the reader's re-SUBSCRIBE still names its
// original start, which must not restart it; it ends if nobody comes back within
// seekReattachWindow.
func (c *Consumer) Seek(ctx context.Context, at *Position, publishTime time.Time) error {
	var move func(*logCursor) error
	if at != nil {
		p := *at
		move = func(cur *logCursor) error {
			err := cur.resetTo(ctx, p)
			c.sub.resetCompactedLocked(&p) // compaction_read.go
			return err
		}
	} else {
		move = func(cur *logCursor) error {
			err := cur.resetToTime(ctx, publishTime)
			c.sub.resetCompactedLocked(nil)
			return err
		}
	}
	sub := c.sub
	for _, x := range sub.consumersSnapshot() {
		sub.detach(x, true)
		x.client.Disconnect()
	}
	err := sub.reset(move)
	if !sub.durable {
		time.AfterFunc(seekReattachWindow, sub.endIfAbandoned)
	}
	return err
}

// endIfAbandoned ends a non-durable subscription kept by a seek that still has no
// consumer. The topic's lock is held across the check, so a SUBSCRIBE (which attaches under
// it) either finds the subscription with its consumer or does not find it at all.
func (s *Subscription) endIfAbandoned() {
	t := s.t
	t.mu.Lock()
	idle := len(s.consumersSnapshot()) == 0
	if idle && t.subs[s.name] == s {
		delete(t.subs, s.name)
	}
	t.mu.Unlock()
	if idle {
		s.stop()
	}
}

// Name is the subscription's name.
func (s *Subscription) Name() string { return s.name }

// Type is the subscription's type.
func (s *Subscription) Type() SubType {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.d.kind()
}

// Topic is the subscription's topic.
func (s *Subscription) Topic() *Topic { return s.t }

// MarkDeletePosition is the newest position up to which everything is acknowledged, and
// false for a subscription without a cursor (non-persistent topics).
func (s *Subscription) MarkDeletePosition() (Position, bool) {
	if s.cursor == nil {
		return Position{}, false
	}
	return s.cursor.markDeletePosition(), true
}

// Subscription is the subscription called name that consumers (or CreateSubscription)
// attached since the topic loaded, nil if there is none.
func (t *Topic) Subscription(name string) *Subscription { return t.attached(name) }

// CacheActive tells whether the managed ledger caches new entries for this subscription:
// it has consumers and is not far behind (managedledger/cursor_active.go).
func (s *Subscription) CacheActive() bool { return s.cursor != nil && s.cursor.c.IsActive() }

// EntriesRead is how many entries the subscription's dispatcher read from its cursor's read
// position (sent or not: dispatch_size.go keeps reads close to what permits allow).
func (s *Subscription) EntriesRead() int64 {
	if s.cursor == nil {
		return 0
	}
	return s.cursor.c.EntriesRead()
}
