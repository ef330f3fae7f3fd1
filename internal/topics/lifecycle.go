package topics

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/magnetar-io/magnetar/internal/resources"
	"github.com/magnetar-io/magnetar/internal/wire"
)

// Topic lifecycle: records, loading (ownership checked), auto-creation, listing.

// Partitions returns the partition count of a partitioned topic, 0 if the topic is a
// partition, and wraps resources.ErrNotFound if no such partitioned topic exists.
func (s *Service) Partitions(ctx context.Context, name Name) (int, error) {
	if name.Partition >= 0 {
		return 0, nil
	}
	m, err := s.res.PartitionedTopic(ctx, name.Domain, name.Tenant, name.Namespace, name.Local)
	switch {
	case errors.Is(err, resources.ErrNotFound):
		return 0, fmt.Errorf("partitioned topic %s: %w", name, err)
	case err != nil:
		return 0, fmt.Errorf("%w: partitioned topic %s: %w", wire.ErrMetadata, name, err)
	}
	return m.Partitions, nil
}

// PartitionsFor answers a client's question how many partitions topic has (Pulsar's
// PARTITIONED_METADATA): N for a partitioned topic, 0 for a non-partitioned one, a
// partition, or a topic that does not exist yet, unless auto-creation makes it a
// partitioned topic now.
func (s *Service) PartitionsFor(ctx context.Context, name Name) (int, error) {
	if err := s.authorize(ctx, ActionLookup, name); err != nil {
		return 0, err
	}
	n, err := s.Partitions(ctx, name)
	if err == nil {
		return n, nil
	}
	if !errors.Is(err, resources.ErrNotFound) {
		return 0, err
	}
	exists, err := s.topicExists(ctx, name)
	if err != nil || exists {
		return 0, err
	}
	allow, partitions := s.autoCreation(ctx, name) // autocreate.go
	if !allow || partitions == 0 || name.Partition >= 0 {
		return 0, nil
	}
	if err := s.CheckNamespace(ctx, name); err != nil {
		return 0, err
	}
	if err := s.CreateTopic(ctx, name, partitions); err != nil && !errors.Is(err, resources.ErrAlreadyExists) {
		return 0, err
	}
	return s.Partitions(ctx, name)
}

// CheckNamespace fails with ErrTopicNotFound, naming the namespace, when the topic's
// namespace does not exist: topics are auto-created, tenants and namespaces never are, so a
// typo in either gets a clear error instead of a topic nobody will find.
func (s *Service) CheckNamespace(ctx context.Context, name Name) error {
	_, err := s.res.Namespace(ctx, name.Tenant, name.Namespace)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, resources.ErrNotFound), errors.Is(err, resources.ErrInvalid):
		return fmt.Errorf("%w: namespace %s does not exist (topics are created on first use, namespaces are not: magnetar admin namespaces create %s)",
			wire.ErrTopicNotFound, name.NamespaceName(), name.NamespaceName())
	default:
		return fmt.Errorf("%w: namespace %s: %w", wire.ErrMetadata, name.NamespaceName(), err)
	}
}

// CreateTopic records a topic: partitioned with n partitions when n > 0, else
// non-partitioned. It wraps resources.ErrAlreadyExists if it already exists.
func (s *Service) CreateTopic(ctx context.Context, name Name, partitions int) error {
	if err := s.checkTopicQuota(ctx, name, max(partitions, 1)); err != nil { // policies.go
		return err
	}
	if partitions > 0 {
		if name.Partition >= 0 {
			return fmt.Errorf("%w: a partition cannot be partitioned", wire.ErrNotAllowed)
		}
		err := s.res.CreatePartitionedTopic(ctx, name.Domain, name.Tenant, name.Namespace, name.Local,
			resources.PartitionedTopicMetadata{Partitions: partitions})
		if err != nil {
			return fmt.Errorf("create %s: %w", name, err)
		}
		return nil
	}
	if err := s.res.CreateTopic(ctx, name.Domain, name.Tenant, name.Namespace, name.Local); err != nil {
		return fmt.Errorf("create %s: %w", name, err)
	}
	return nil
}

// creationTime is when name was recorded (Unix ms): a partition's partitioned topic, or
// the topic's own record. Records written before they held the time (or a failed read)
// give the time of this load, so stats never show 0 for a topic that exists.
func (s *Service) creationTime(ctx context.Context, name Name) int64 {
	if name.Partition >= 0 {
		b := name.Base()
		if m, err := s.res.PartitionedTopic(ctx, b.Domain, b.Tenant, b.Namespace, b.Local); err == nil && m.CreationTimestamp > 0 {
			return m.CreationTimestamp
		}
	}
	if r, err := s.res.Topic(ctx, name.Domain, name.Tenant, name.Namespace, name.Local); err == nil && r.CreationTimestamp > 0 {
		return r.CreationTimestamp
	}
	return time.Now().UnixMilli()
}

// TopicExists tells whether a non-partitioned topic or a partition is recorded.
func (s *Service) TopicExists(ctx context.Context, name Name) (bool, error) {
	if err := s.authorize(ctx, ActionLookup, name); err != nil {
		return false, err
	}
	return s.topicExists(ctx, name)
}

// topicExists tells whether a non-partitioned topic or partition is recorded. A partition
// of an existing partitioned topic exists.
func (s *Service) topicExists(ctx context.Context, name Name) (bool, error) {
	if name.Partition >= 0 {
		n, err := s.Partitions(ctx, name.Base())
		if err == nil && name.Partition < n {
			return true, nil
		}
	}
	_, err := s.res.Topic(ctx, name.Domain, name.Tenant, name.Namespace, name.Local)
	if err == nil {
		return true, nil
	}
	if errors.Is(err, resources.ErrNotFound) {
		return false, nil
	}
	return false, fmt.Errorf("%w: %w", wire.ErrMetadata, err)
}

// ListTopics lists the topics of namespace "tenant/ns" of domain (DomainPersistent,
// DomainNonPersistent, or "" for both), partitions one by one, sorted.
func (s *Service) ListTopics(ctx context.Context, namespace, domain string) ([]string, error) {
	if tenant, ns, ok := strings.Cut(namespace, "/"); ok {
		if err := s.authorize(ctx, ActionListTopics, Name{Tenant: tenant, Namespace: ns}); err != nil {
			return nil, err
		}
	} else if s.authz != nil {
		return nil, fmt.Errorf("%w: namespace %q is not tenant/namespace", wire.ErrInvalidTopicName, namespace)
	}
	want := func(n Name) bool { return domain == "" || n.Domain == domain }
	recorded, partitioned, err := s.res.NamespaceTopics(ctx, namespace)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", wire.ErrMetadata, err)
	}
	seen := map[string]bool{}
	for _, t := range recorded {
		if n, err := ParseName(t); err == nil && want(n) {
			seen[t] = true
		}
	}
	for t, parts := range partitioned {
		n, err := ParseName(t)
		if err != nil || !want(n) {
			continue
		}
		for i := 0; i < parts; i++ {
			seen[n.PartitionName(i).String()] = true
		}
	}
	// Topics loaded on this broker but created before records existed are listed too.
	for _, t := range s.LoadedTopics() {
		if t.name.NamespaceName() == namespace && want(t.name) {
			seen[t.name.String()] = true
		}
	}
	out := make([]string, 0, len(seen))
	for t := range seen {
		out = append(out, t)
	}
	sort.Strings(out)
	return out, nil
}

// Load says how Service.Topic may load a topic.
type Load struct {
	// Create allows creating a topic that is not recorded, when auto-creation permits;
	// otherwise such a topic is ErrTopicNotFound.
	Create bool
}

// Topic returns the loaded topic, loading it if needed: ownership checked (a cluster
// broker loads only topics of its bundles), the log opened with recovery, policies applied
// and deduplication state recovered.
func (s *Service) Topic(ctx context.Context, name Name, how Load) (*Topic, error) {
	if err := s.authorize(ctx, ActionLookup, name); err != nil {
		return nil, err
	}
	return s.getTopic(ctx, name, how.Create)
}

// getTopic returns the loaded topic, loading it if needed. create says whether the caller
// may create it (auto-creation permitting); otherwise a topic that is not recorded is
// wire.ErrTopicNotFound.
func (s *Service) getTopic(ctx context.Context, name Name, create bool) (*Topic, error) {
	key := name.String()
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil, fmt.Errorf("%w: %w", wire.ErrServiceNotReady, ErrClosed)
	}
	if f, ok := s.topics[key]; ok {
		s.mu.Unlock()
		select {
		case <-f.done:
		case <-ctx.Done():
			return nil, fmt.Errorf("%w: %w", wire.ErrServiceNotReady, ctx.Err())
		}
		if f.err == nil {
			return f.t, nil
		}
		return nil, f.err
	}
	f := &topicFuture{done: make(chan struct{})}
	s.topics[key] = f
	s.mu.Unlock()

	f.t, f.err = s.loadTopic(ctx, name, create)
	if f.err != nil {
		s.mu.Lock()
		delete(s.topics, key)
		s.mu.Unlock()
	}
	close(f.done)
	return f.t, f.err
}

func (s *Service) loadTopic(ctx context.Context, name Name, create bool) (*Topic, error) {
	if err := s.checkOwner(ctx, name); err != nil {
		return nil, err
	}
	if name.Partition < 0 {
		// A partitioned topic itself has no log: clients address its partitions.
		if n, err := s.Partitions(ctx, name); err == nil && n > 0 {
			return nil, fmt.Errorf("%w: %s is a partitioned topic; use its partitions", wire.ErrNotAllowed, name)
		}
	}
	exists, err := s.topicExists(ctx, name)
	if err != nil {
		return nil, err
	}
	if !exists {
		if !create || !s.autoCreateAllowed(ctx, name) {
			return nil, fmt.Errorf("%w: %s", wire.ErrTopicNotFound, name)
		}
		if err := s.CheckNamespace(ctx, name); err != nil {
			return nil, err
		}
		if err := s.CreateTopic(ctx, name, 0); err != nil && !errors.Is(err, resources.ErrAlreadyExists) {
			return nil, fmt.Errorf("%w: create %s: %w", wire.ErrMetadata, name, err)
		}
	}
	t := newTopic(s, name)
	t.created = s.creationTime(ctx, name)
	if name.Persistent() {
		l, err := s.openLog(ctx, name)
		if err != nil {
			return nil, fmt.Errorf("%w: open %s: %w", wire.ErrPersistence, name, err)
		}
		t.log = l
		err = s.applyPolicies(ctx, t)
		if err == nil {
			err = s.openTopicTxn(ctx, t) // txn.go
		}
		if err != nil {
			cctx, cancel := context.WithTimeout(context.Background(), opTimeout)
			_ = l.close(cctx)
			cancel()
			return nil, err
		}
	}
	if err := s.recheckOwner(ctx, t); err != nil {
		return nil, err
	}
	s.log.Info("topic loaded", "topic", name.String())
	return t, nil
}
