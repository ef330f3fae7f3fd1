package topics

import (
	"context"
	"errors"
	"fmt"

	"github.com/magnetar-io/magnetar/internal/resources"
	"github.com/magnetar-io/magnetar/internal/wire"
)

// Operations on whole topics: unload, terminate, delete (the admin API and ownership use
// them).

// UnloadTopic disconnects the topic's producers and consumers (clients reconnect and the
// topic loads again), closes its log and forgets it. Unloading a topic that is not loaded
// does nothing.
func (s *Service) UnloadTopic(ctx context.Context, name Name) error {
	t := s.Loaded(name)
	if t == nil {
		return nil
	}
	return s.unload(ctx, t)
}

func (s *Service) unload(ctx context.Context, t *Topic) error {
	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		return nil
	}
	t.closed = true // refuse new producers and consumers while unloading
	producers, subs := t.attachedLocked()
	t.mu.Unlock()
	for _, p := range producers {
		p.client.Disconnect()
	}
	for _, sub := range subs {
		for _, cs := range sub.consumersSnapshot() {
			sub.disconnect(cs)
		}
	}
	err := t.closeResources(ctx)
	s.mu.Lock()
	if f := s.topics[t.full]; f != nil && f.t == t {
		delete(s.topics, t.full)
	}
	s.mu.Unlock()
	s.log.Info("topic unloaded", "topic", t.full)
	return err
}

// TerminateTopic makes a persistent topic refuse further messages (producers are
// disconnected and cannot come back: ErrTopicTerminated) and returns the position of its
// last message; consumers can still drain it.
func (s *Service) TerminateTopic(ctx context.Context, name Name) (Position, error) {
	if !name.Persistent() {
		return Position{}, fmt.Errorf("%w: only persistent topics can be terminated", wire.ErrNotAllowed)
	}
	t, err := s.Topic(ctx, name, Load{})
	if err != nil {
		return Position{}, err
	}
	p, err := t.log.terminate(ctx)
	if err != nil {
		return Position{}, err
	}
	// Waiters first: removing the exclusive holder below would grant the topic to one.
	t.refuseWaiters()
	t.disconnectProducers()
	return p, nil
}

// DeleteTopic deletes a non-partitioned topic or a partition: its log, cursors and record.
// With connected producers or consumers it fails (ErrNotAllowed) unless force, which
// disconnects them first.
func (s *Service) DeleteTopic(ctx context.Context, name Name, force bool) error {
	exists, err := s.topicExists(ctx, name)
	if err != nil {
		return err
	}
	if !exists {
		return fmt.Errorf("%w: %s", wire.ErrTopicNotFound, name)
	}
	if t := s.Loaded(name); t != nil {
		t.mu.Lock()
		busy := len(t.producers) > 0
		for _, sub := range t.subs {
			if len(sub.consumersSnapshot()) > 0 {
				busy = true
			}
		}
		t.mu.Unlock()
		if busy && !force {
			return fmt.Errorf("%w: topic %s has active producers or consumers", wire.ErrNotAllowed, name)
		}
		if err := s.unload(ctx, t); err != nil {
			return err
		}
	}
	if name.Persistent() {
		l, err := s.openLog(ctx, name)
		if err != nil {
			return fmt.Errorf("%w: delete %s: %w", wire.ErrPersistence, name, err)
		}
		l.dropCompactedLedger(ctx) // compaction.go
		if err := l.destroy(ctx); err != nil {
			return fmt.Errorf("delete %s: %w", name, err)
		}
		if err := s.deleteTopicTxn(ctx, name); err != nil { // txn.go
			return err
		}
	}
	if err := s.res.DeleteTopic(ctx, name.Domain, name.Tenant, name.Namespace, name.Local); err != nil && !errors.Is(err, resources.ErrNotFound) {
		return fmt.Errorf("%w: delete %s: %w", wire.ErrMetadata, name, err)
	}
	if name.Partition < 0 {
		if err := s.dropSchema(ctx, name); err != nil {
			return err
		}
	}
	return s.dropTopicPolicies(ctx, name)
}
