package topics

import (
	"context"
	"fmt"
	"time"

	"github.com/magnetar-io/magnetar/internal/managedledger"
	"github.com/magnetar-io/magnetar/internal/wire"
)

// Subscription operations for the admin REST layer (pulsar-admin topics
// create-subscription, unsubscribe, skip, clear-backlog, expire-messages, reset-cursor).
// A subscription here is a durable cursor, attached to consumers or not.

// persistentTopic loads a persistent topic (create: as a subscribe would, auto-creation
// permitting) for an administrative operation.
func (s *Service) persistentTopic(ctx context.Context, name Name, create bool) (*Topic, error) {
	if !name.Persistent() {
		return nil, fmt.Errorf("%w: %s is not a persistent topic", wire.ErrNotAllowed, name)
	}
	if err := s.authorize(ctx, ActionAdmin, name); err != nil {
		return nil, err
	}
	return s.getTopic(ctx, name, create)
}

// subscriptionTopic is persistentTopic for an operation on subscription sub (or, with sub
// "", on the topic's messages): consume permission is what Pulsar asks of
// create-subscription, unsubscribe, skip, expire, reset-cursor and peeking.
func (s *Service) subscriptionTopic(ctx context.Context, name Name, sub string, create bool) (*Topic, error) {
	if !name.Persistent() {
		return nil, fmt.Errorf("%w: %s is not a persistent topic", wire.ErrNotAllowed, name)
	}
	if err := s.authorizeSub(ctx, ActionConsume, name, sub); err != nil {
		return nil, err
	}
	return s.getTopic(ctx, name, create)
}

// durableCursor returns the loaded persistent topic and the durable cursor of sub (which
// need not have consumers), or ErrSubscriptionNotFound.
func (s *Service) durableCursor(ctx context.Context, name Name, sub string) (*Topic, *managedledger.Cursor, error) {
	t, err := s.subscriptionTopic(ctx, name, sub, false)
	if err != nil {
		return nil, nil, err
	}
	c, ok := t.log.ml.Cursor(sub)
	if !ok || !c.IsDurable() {
		return nil, nil, fmt.Errorf("%w: subscription %s on %s", wire.ErrSubscriptionNotFound, sub, t.full)
	}
	return t, c, nil
}

// attached is the subscription object of sub if consumers attached it since the topic
// loaded (or CreateSubscription made it), nil otherwise.
func (t *Topic) attached(sub string) *Subscription {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.subs[sub]
}

// CreateSubscription creates a durable subscription whose first message is the one at at:
// Earliest, Latest or a stored entry. Like a subscribe, it creates the topic when
// auto-creation allows; an existing subscription is ErrSubscriptionExists.
func (s *Service) CreateSubscription(ctx context.Context, name Name, sub string, at Position) error {
	if sub == "" {
		return fmt.Errorf("%w: empty subscription name", wire.ErrNotAllowed)
	}
	if isSystemCursor(sub) {
		return fmt.Errorf("%w: subscription name %q is reserved", wire.ErrNotAllowed, sub)
	}
	t, err := s.subscriptionTopic(ctx, name, sub, true)
	if err != nil {
		return err
	}
	if _, ok := t.log.ml.Cursor(sub); ok { // stored but not attached since the topic loaded
		return fmt.Errorf("%w: %s on %s", ErrSubscriptionExists, sub, t.full)
	}
	t.mu.Lock()
	if t.subs[sub] != nil {
		t.mu.Unlock()
		return fmt.Errorf("%w: %s on %s", ErrSubscriptionExists, sub, t.full)
	}
	if err := t.admitSubscriptionLocked(sub, t.pol.get()); err != nil { // policies.go
		t.mu.Unlock()
		return err
	}
	cur, err := t.log.openCursor(ctx, sub, at == Earliest)
	if err != nil {
		t.mu.Unlock()
		return fmt.Errorf("%w: create subscription %s on %s: %w", wire.ErrPersistence, sub, t.full, err)
	}
	ns := newSubscription(t, sub, Exclusive, true, cur)
	if err := t.attachTxnLocked(ctx, ns); err != nil { // txn.go
		t.mu.Unlock()
		return err
	}
	t.subs[sub] = ns
	t.mu.Unlock()
	if at != Earliest && at != Latest {
		return s.ResetSubscription(ctx, name, sub, &at, time.Time{})
	}
	return nil
}

// DeleteSubscription deletes a subscription and its cursor. With connected consumers it
// fails (ErrNotAllowed) unless force, which disconnects them.
func (s *Service) DeleteSubscription(ctx context.Context, name Name, sub string, force bool) error {
	t, _, err := s.durableCursor(ctx, name, sub)
	if err != nil {
		return err
	}
	if sb := t.attached(sub); sb != nil {
		consumers := sb.consumersSnapshot()
		if len(consumers) > 0 && !force {
			return fmt.Errorf("%w: subscription %s has %d connected consumers", wire.ErrNotAllowed, sub, len(consumers))
		}
		t.removeSubscription(sb)
		for _, cs := range consumers {
			sb.disconnect(cs)
		}
		sb.stop()
	}
	if err := t.log.deleteCursor(ctx, sub); err != nil {
		return fmt.Errorf("delete subscription %s on %s: %w", sub, name, err)
	}
	t.txnRemoveSubscription(sub) // txn.go
	return nil
}

// Skip acknowledges the next n unacknowledged messages of sub (dispatch skips acknowledged
// entries by itself, so the subscription needs no reset); n < 0 clears the whole backlog.
func (s *Service) Skip(ctx context.Context, name Name, sub string, n int64) error {
	_, c, err := s.durableCursor(ctx, name, sub)
	if err != nil {
		return err
	}
	if n < 0 {
		return s.ClearBacklog(ctx, name, sub)
	}
	return mlErr(c.Skip(n))
}

// ClearBacklog acknowledges everything stored for the subscription.
func (s *Service) ClearBacklog(ctx context.Context, name Name, sub string) error {
	return s.resetSubscription(ctx, name, sub, false, func(t *Topic, cur *logCursor) error {
		return cur.markDelete(ctx, t.log.lastConfirmed())
	})
}

// ExpireMessages acknowledges the messages of sub published before now-age.
func (s *Service) ExpireMessages(ctx context.Context, name Name, sub string, age time.Duration) error {
	t, c, err := s.durableCursor(ctx, name, sub)
	if err != nil {
		return err
	}
	p, err := t.log.ml.FindByPublishTime(ctx, s.now().Add(-age), entryPublishTime)
	if err != nil {
		return mlErr(err)
	}
	// (L, e-1) is the position just before p, also for e = 0 (nothing of L consumed).
	return mlErr(c.MarkDelete(Position{LedgerID: p.LedgerID, EntryID: p.EntryID - 1}))
}

// ResetSubscription moves a subscription so that the next message delivered is the one at
// at, or, when at is nil, the first published at or after publishTime. Connected consumers
// are disconnected and re-subscribe from there; the dispatch state goes with the move.
func (s *Service) ResetSubscription(ctx context.Context, name Name, sub string, at *Position, publishTime time.Time) error {
	return s.resetSubscription(ctx, name, sub, true, func(_ *Topic, cur *logCursor) error {
		if at == nil {
			return cur.resetToTime(ctx, publishTime)
		}
		return cur.resetTo(ctx, *at)
	})
}

func (s *Service) resetSubscription(ctx context.Context, name Name, sub string, bounce bool, move func(*Topic, *logCursor) error) error {
	t, _, err := s.durableCursor(ctx, name, sub)
	if err != nil {
		return err
	}
	sb := t.attached(sub)
	if sb == nil {
		// Not attached to any consumer since the topic loaded: open its cursor.
		cur, err := t.log.openCursor(ctx, sub, false)
		if err != nil {
			return err
		}
		return move(t, cur)
	}
	if bounce {
		for _, cs := range sb.consumersSnapshot() {
			sb.disconnect(cs)
		}
	}
	return sb.reset(func(cur *logCursor) error { return move(t, cur) })
}

// Subscriptions lists the topic's subscriptions: the durable cursors and the subscriptions
// currently attached (readers included, as Pulsar lists them).
func (s *Service) Subscriptions(ctx context.Context, name Name) ([]string, error) {
	t, err := s.Topic(ctx, name, Load{})
	if err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	out := []string{}
	add := func(name string) {
		if !seen[name] {
			seen[name] = true
			out = append(out, name)
		}
	}
	if t.log != nil {
		for _, n := range t.log.cursorNames() {
			add(n)
		}
	}
	t.mu.Lock()
	for name := range t.subs {
		add(name)
	}
	t.mu.Unlock()
	return out, nil
}
