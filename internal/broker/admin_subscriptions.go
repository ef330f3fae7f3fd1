package broker

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/magnetar-io/magnetar/internal/wire"
	"github.com/magnetar-io/magnetar/internal/wire/pb"
)

// Subscription operations for the admin REST layer (pulsar-admin topics
// create-subscription, unsubscribe, clear-backlog, reset-cursor).

// ErrSubscriptionExists is returned by CreateSubscription for a name already in use.
var ErrSubscriptionExists = errors.New("broker: subscription already exists")

// adminSubscription returns the loaded persistent topic and, if it exists, the named
// subscription (opening its cursor if the subscription exists only in storage).
func (s *Server) adminSubscription(ctx context.Context, name TopicName, sub string) (*topic, *subscription, error) {
	if !name.Persistent() {
		return nil, nil, fmt.Errorf("%w: subscriptions of non-persistent topics live only while consumers are connected", wire.ErrNotAllowed)
	}
	t, err := s.getTopic(ctx, name, false)
	if err != nil {
		return nil, nil, err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	return t, t.subs[sub], nil
}

// CreateSubscription creates a durable subscription at the newest (or, if earliest, the
// oldest) message.
func (s *Server) CreateSubscription(ctx context.Context, name TopicName, sub string, earliest bool) error {
	if sub == "" {
		return fmt.Errorf("%w: empty subscription name", wire.ErrNotAllowed)
	}
	t, existing, err := s.adminSubscription(ctx, name, sub)
	if err != nil {
		return err
	}
	if existing != nil {
		return fmt.Errorf("%w: %s on %s", ErrSubscriptionExists, sub, name)
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.subs[sub] != nil {
		return fmt.Errorf("%w: %s on %s", ErrSubscriptionExists, sub, name)
	}
	cur, err := t.log.openCursor(ctx, sub, earliest)
	if err != nil {
		return fmt.Errorf("%w: create subscription %s on %s: %w", wire.ErrPersistence, sub, name, err)
	}
	t.subs[sub] = newSubscription(t, sub, pb.CommandSubscribe_Exclusive, true, cur)
	return nil
}

// DeleteSubscription deletes a subscription and its cursor. With connected consumers it
// fails (wire.ErrNotAllowed) unless force, which disconnects them.
func (s *Server) DeleteSubscription(ctx context.Context, name TopicName, sub string, force bool) error {
	t, sb, err := s.adminSubscription(ctx, name, sub)
	if err != nil {
		return err
	}
	if sb != nil {
		consumers := sb.consumersSnapshot()
		if len(consumers) > 0 && !force {
			return fmt.Errorf("%w: subscription %s has %d connected consumers", wire.ErrNotAllowed, sub, len(consumers))
		}
		t.removeSubscription(sb)
		for _, cs := range consumers {
			cs.c.closeConsumerFromBroker(cs)
		}
		sb.stop()
	}
	if err := t.log.deleteCursor(ctx, sub); err != nil {
		return fmt.Errorf("delete subscription %s on %s: %w", sub, name, err)
	}
	return nil
}

// ClearBacklog acknowledges everything stored for the subscription.
func (s *Server) ClearBacklog(ctx context.Context, name TopicName, sub string) error {
	return s.resetSubscription(ctx, name, sub, false, func(cur logCursor) error {
		return cur.markDelete(ctx, s.mustLog(name).lastConfirmed())
	})
}

// ResetSubscription moves a subscription so that the next message delivered is the one at
// (ledgerID, entryID), or, when publishTime is non-zero, the first published at or after
// it. Connected consumers are disconnected and re-subscribe from there.
func (s *Server) ResetSubscription(ctx context.Context, name TopicName, sub string, ledgerID, entryID int64, publishTime time.Time) error {
	return s.resetSubscription(ctx, name, sub, true, func(cur logCursor) error {
		if !publishTime.IsZero() {
			return cur.resetToTime(ctx, publishTime)
		}
		return cur.resetTo(ctx, position{ledgerID, entryID})
	})
}

func (s *Server) resetSubscription(ctx context.Context, name TopicName, sub string, bounce bool, move func(logCursor) error) error {
	t, sb, err := s.adminSubscription(ctx, name, sub)
	if err != nil {
		return err
	}
	if sb == nil {
		// Not attached to any consumer since the topic loaded: open its cursor, if it exists.
		found := false
		if names, err := t.log.cursorNames(); err == nil {
			for _, n := range names {
				found = found || n == sub
			}
		}
		if !found {
			return fmt.Errorf("%w: %s on %s", wire.ErrSubscriptionNotFound, sub, name)
		}
		cur, err := t.log.openCursor(ctx, sub, false)
		if err != nil {
			return err
		}
		return move(cur)
	}
	if bounce {
		for _, cs := range sb.consumersSnapshot() {
			cs.c.closeConsumerFromBroker(cs)
		}
	}
	return sb.reset(move)
}

// mustLog is the log of a topic known to be loaded and persistent.
func (s *Server) mustLog(name TopicName) topicLog {
	return s.loadedTopic(name).log
}
