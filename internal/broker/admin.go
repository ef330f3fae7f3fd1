package broker

import (
	"context"
	"errors"
	"fmt"

	"github.com/magnetar-io/magnetar/internal/metadata"
	"github.com/magnetar-io/magnetar/internal/wire"
)

// Operations for the admin REST layer (topics stats, unload, delete).

// PublisherStats describes one producer of a topic.
type PublisherStats struct {
	ProducerName string `json:"producerName"`
	ProducerID   uint64 `json:"producerId"`
	Address      string `json:"address"`
}

// ConsumerStats describes one consumer of a subscription.
type ConsumerStats struct {
	ConsumerName     string `json:"consumerName"`
	AvailablePermits int    `json:"availablePermits"`
	UnackedMessages  int    `json:"unackedMessages"` // messages dispatched and not acknowledged
	Address          string `json:"address"`
}

// SubscriptionStats describes one subscription.
type SubscriptionStats struct {
	Type       string          `json:"type"`
	MsgBacklog int64           `json:"msgBacklog"` // unacknowledged entries
	IsDurable  bool            `json:"isDurable"`
	Consumers  []ConsumerStats `json:"consumers"`
	MsgDelayed int             `json:"msgDelayed"` // held by delayed delivery (delayed.go)
}

// TopicStats is a snapshot of a loaded topic (shapes follow Pulsar's topic stats JSON).
type TopicStats struct {
	StorageSize   int64                        `json:"storageSize"`
	Publishers    []PublisherStats             `json:"publishers"`
	Subscriptions map[string]SubscriptionStats `json:"subscriptions"`
}

// TopicStats returns the stats of a topic loaded on this broker; a topic that exists but
// is not loaded has empty stats; one that does not exist wraps wire.ErrTopicNotFound.
func (s *Server) TopicStats(ctx context.Context, name TopicName) (TopicStats, error) {
	st := TopicStats{Publishers: []PublisherStats{}, Subscriptions: map[string]SubscriptionStats{}}
	t := s.loadedTopic(name)
	if t == nil {
		exists, err := s.topicExists(ctx, name)
		if err != nil {
			return st, err
		}
		if !exists {
			return st, fmt.Errorf("%w: %s", wire.ErrTopicNotFound, name)
		}
		return st, nil
	}
	if t.log != nil {
		st.StorageSize = t.log.storageSize()
	}
	t.mu.Lock()
	for _, p := range t.producers {
		st.Publishers = append(st.Publishers, PublisherStats{ProducerName: p.name, ProducerID: p.id, Address: p.c.remote})
	}
	subs := make([]*subscription, 0, len(t.subs))
	for _, sub := range t.subs {
		subs = append(subs, sub)
	}
	t.mu.Unlock()
	for _, sub := range subs {
		ss := SubscriptionStats{IsDurable: sub.durable, Consumers: []ConsumerStats{}}
		if sub.cursor != nil {
			ss.MsgBacklog = sub.cursor.backlog()
		}
		sub.mu.Lock()
		ss.Type = sub.typ.String()
		ss.MsgDelayed = sub.delayed.len()
		for _, cs := range sub.consumers {
			ss.Consumers = append(ss.Consumers, ConsumerStats{ConsumerName: cs.name, AvailablePermits: cs.permits,
				UnackedMessages: cs.unacked, Address: cs.c.remote})
		}
		sub.mu.Unlock()
		st.Subscriptions[sub.name] = ss
	}
	return st, nil
}

func (s *Server) loadedTopic(name TopicName) *topic {
	s.mu.Lock()
	f := s.topics[name.String()]
	s.mu.Unlock()
	if f == nil {
		return nil
	}
	select {
	case <-f.done:
		return f.t
	default:
		return nil
	}
}

// UnloadTopic disconnects the topic's producers and consumers (CLOSE_PRODUCER /
// CLOSE_CONSUMER: clients reconnect and the topic loads again), closes its log and forgets
// it. Unloading a topic that is not loaded does nothing.
func (s *Server) UnloadTopic(ctx context.Context, name TopicName) error {
	t := s.loadedTopic(name)
	if t == nil {
		return nil
	}
	return s.unload(ctx, t)
}

func (s *Server) unload(ctx context.Context, t *topic) error {
	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		return nil
	}
	t.closed = true // refuse new producers and consumers while unloading
	producers := make([]*producer, 0, len(t.producers))
	for _, p := range t.producers {
		producers = append(producers, p)
	}
	subs := make([]*subscription, 0, len(t.subs))
	for _, sub := range t.subs {
		subs = append(subs, sub)
	}
	t.mu.Unlock()
	for _, p := range producers {
		p.c.closeProducerFromBroker(p)
	}
	for _, sub := range subs {
		for _, cs := range sub.consumersSnapshot() {
			cs.c.closeConsumerFromBroker(cs)
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
// disconnected and cannot come back: TopicTerminatedError) and returns the id of its last
// message; consumers can still drain it.
func (s *Server) TerminateTopic(ctx context.Context, name TopicName) (ledgerID, entryID int64, err error) {
	if !name.Persistent() {
		return 0, 0, fmt.Errorf("%w: only persistent topics can be terminated", wire.ErrNotAllowed)
	}
	t, err := s.getTopic(ctx, name, false)
	if err != nil {
		return 0, 0, err
	}
	p, err := t.log.terminate(ctx)
	if err != nil {
		return 0, 0, err
	}
	// Waiters first: removing the exclusive holder below would grant the topic to one.
	t.refuseWaiters()
	t.mu.Lock()
	producers := make([]*producer, 0, len(t.producers))
	for _, pr := range t.producers {
		producers = append(producers, pr)
	}
	t.mu.Unlock()
	for _, pr := range producers {
		t.removeProducer(pr)
		pr.c.closeProducerFromBroker(pr)
	}
	return p.ledger, p.entry, nil
}

// DeleteTopic deletes a non-partitioned topic or a partition: its log, cursors and record.
// With connected producers or consumers it fails (wire.ErrNotAllowed) unless force, which
// disconnects them first.
func (s *Server) DeleteTopic(ctx context.Context, name TopicName, force bool) error {
	exists, err := s.topicExists(ctx, name)
	if err != nil {
		return err
	}
	if !exists {
		return fmt.Errorf("%w: %s", wire.ErrTopicNotFound, name)
	}
	if t := s.loadedTopic(name); t != nil {
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
		l, err := s.logs.open(ctx, name.ManagedLedgerName())
		if err != nil {
			return fmt.Errorf("%w: delete %s: %w", wire.ErrPersistence, name, err)
		}
		if err := l.destroy(ctx); err != nil {
			return fmt.Errorf("delete %s: %w", name, err)
		}
	}
	if err := s.store.Delete(ctx, TopicKey(name), metadata.AnyVersion); err != nil && !errors.Is(err, metadata.ErrNotFound) {
		return fmt.Errorf("%w: delete %s: %w", wire.ErrMetadata, name, err)
	}
	if name.Partition < 0 {
		if err := s.dropSchema(ctx, name); err != nil {
			return err
		}
	}
	return s.dropTopicPolicies(ctx, name)
}
