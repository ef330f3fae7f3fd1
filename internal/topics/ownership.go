package topics

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/magnetar-io/magnetar/internal/ownership"
	"github.com/magnetar-io/magnetar/internal/resources"
	"github.com/magnetar-io/magnetar/internal/wire"
)

// Ownership is bundle ownership in a cluster (internal/ownership.Manager implements it).
// A service without one (standalone) serves every topic it is asked for.
type Ownership interface {
	// Lookup says whether this broker serves topic (owning or taking its bundle) or which
	// broker to send the client to.
	Lookup(ctx context.Context, topic string, authoritative bool) (ownership.Result, error)
	// Acquire makes sure this broker owns topic's bundle before the topic is loaded.
	Acquire(ctx context.Context, topic string) error
	// Holds tells, without I/O, whether this broker still holds topic's bundle.
	Holds(topic string) bool
}

// recheckOwner closes a topic that finished loading after its bundle was lost (the session
// ended while the log was being opened, after the unload sweep had passed): it must not be
// served. Fencing would stop its writes anyway; this sends its clients away at once.
func (s *Service) recheckOwner(ctx context.Context, t *Topic) error {
	if s.own == nil || s.own.Holds(t.full) {
		return nil
	}
	_ = t.closeResources(ctx)
	return fmt.Errorf("%w: bundle of %s lost while loading it", wire.ErrServiceNotReady, t.full)
}

// Ownership is the cluster's bundle ownership, nil in a standalone.
func (s *Service) Ownership() Ownership { return s.own }

// checkOwner refuses to load a topic whose bundle another broker owns: two brokers must
// never open one managed ledger for writing (each would fence the other in turn).
func (s *Service) checkOwner(ctx context.Context, name Name) error {
	if s.own == nil {
		return nil
	}
	err := s.own.Acquire(ctx, name.String())
	switch {
	case err == nil:
		return nil
	case errors.Is(err, resources.ErrNotFound), errors.Is(err, resources.ErrInvalid):
		return s.CheckNamespace(ctx, name) // no such namespace: TopicNotFound naming it
	}
	return fmt.Errorf("%w: %w", wire.ErrServiceNotReady, err)
}

// UnloadTopics unloads, in parallel, every loaded topic whose full name matches: its
// clients get CLOSE_PRODUCER/CLOSE_CONSUMER and look it up again (ownership.Unloader).
func (s *Service) UnloadTopics(ctx context.Context, match func(topic string) bool) error {
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs []error
	)
	for _, t := range s.LoadedTopics() {
		if !match(t.full) {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := s.unload(ctx, t); err != nil {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// LoadedTopicLoads lists the loaded topics with their producer and consumer counts, for
// automatic bundle splits (ownership.TopicLister).
func (s *Service) LoadedTopicLoads() []ownership.TopicLoad {
	var out []ownership.TopicLoad
	for _, t := range s.LoadedTopics() {
		t.mu.Lock()
		n := len(t.producers)
		subs := make([]*Subscription, 0, len(t.subs))
		for _, sub := range t.subs {
			subs = append(subs, sub)
		}
		t.mu.Unlock()
		for _, sub := range subs {
			n += len(sub.consumersSnapshot())
		}
		out = append(out, ownership.TopicLoad{Topic: t.full, Sessions: n,
			MsgsTotal:  t.counters.msgsIn.Load() + t.counters.msgsOut.Load(),
			BytesTotal: t.counters.bytesIn.Load() + t.counters.bytesOut.Load()})
	}
	return out
}

// LoadStats counts what a load report carries (ownership.Manager.Register); connections
// are the front ends' to add.
func (s *Service) LoadStats() ownership.LoadStats {
	st := ownership.LoadStats{}
	for _, t := range s.LoadedTopics() {
		st.Topics++
		st.MsgsInTotal += t.counters.msgsIn.Load()
		st.MsgsOutTotal += t.counters.msgsOut.Load()
		st.BytesInTotal += t.counters.bytesIn.Load()
		st.BytesOutTotal += t.counters.bytesOut.Load()
		t.mu.Lock()
		st.Producers += len(t.producers)
		subs := make([]*Subscription, 0, len(t.subs))
		for _, sub := range t.subs {
			subs = append(subs, sub)
		}
		t.mu.Unlock()
		for _, sub := range subs {
			st.Consumers += len(sub.consumersSnapshot())
		}
	}
	return st
}
