package broker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/magnetar-io/magnetar/internal/metadata"
	"github.com/magnetar-io/magnetar/internal/resources"
	"github.com/magnetar-io/magnetar/internal/wire"
	"github.com/magnetar-io/magnetar/internal/wire/pb"
)

// partitionedMeta is the JSON value under PartitionedTopicKey (Pulsar's shape).
type partitionedMeta struct {
	Partitions int `json:"partitions"`
}

// Partitions returns the partition count of a partitioned topic, 0 if the topic is not
// partitioned (or is a partition), and wraps metadata.ErrNotFound if no such partitioned
// topic exists.
func (s *Server) Partitions(ctx context.Context, name TopicName) (int, error) {
	if name.Partition >= 0 {
		return 0, nil
	}
	kv, err := s.store.Get(ctx, PartitionedTopicKey(name))
	if err != nil {
		return 0, err
	}
	var pm partitionedMeta
	if err := json.Unmarshal(kv.Value, &pm); err != nil {
		return 0, fmt.Errorf("%w: partitioned topic %s: %w", wire.ErrMetadata, name, err)
	}
	return pm.Partitions, nil
}

// partitionsFor answers PARTITIONED_METADATA, creating a partitioned topic when
// auto-creation is configured that way.
func (s *Server) partitionsFor(ctx context.Context, topic string) (int, error) {
	name, err := ParseTopicName(topic)
	if err != nil {
		return 0, err
	}
	n, err := s.Partitions(ctx, name)
	if err == nil {
		return n, nil
	}
	if !errors.Is(err, metadata.ErrNotFound) {
		return 0, fmt.Errorf("%w: %w", wire.ErrMetadata, err)
	}
	exists, err := s.topicExists(ctx, name)
	if err != nil || exists {
		return 0, err
	}
	allow, partitions := s.autoCreation(ctx, name) // autocreate.go
	if !allow || partitions == 0 || name.Partition >= 0 {
		return 0, nil
	}
	if err := s.checkNamespace(ctx, name); err != nil {
		return 0, err
	}
	if err := s.CreateTopic(ctx, name, partitions); err != nil && !errors.Is(err, metadata.ErrBadVersion) {
		return 0, err
	}
	return s.Partitions(ctx, name)
}

// checkNamespace fails with wire.ErrTopicNotFound, naming the namespace, when the topic's
// namespace does not exist: topics are auto-created, tenants and namespaces never are, so a
// typo in either gets a clear error instead of a topic nobody will find.
func (s *Server) checkNamespace(ctx context.Context, name TopicName) error {
	_, err := resources.New(s.store).Namespace(ctx, name.Tenant, name.Namespace)
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
// non-partitioned. It wraps metadata.ErrBadVersion if it already exists.
func (s *Server) CreateTopic(ctx context.Context, name TopicName, partitions int) error {
	if partitions > 0 {
		if name.Partition >= 0 {
			return fmt.Errorf("%w: a partition cannot be partitioned", wire.ErrNotAllowed)
		}
		v, _ := json.Marshal(partitionedMeta{Partitions: partitions})
		_, err := s.store.Put(ctx, PartitionedTopicKey(name), v, metadata.NotExists)
		return err
	}
	_, err := s.store.Put(ctx, TopicKey(name), []byte("{}"), metadata.NotExists)
	return err
}

// topicExists tells whether a non-partitioned topic or partition is recorded. A partition
// of an existing partitioned topic exists.
func (s *Server) topicExists(ctx context.Context, name TopicName) (bool, error) {
	if name.Partition >= 0 {
		n, err := s.Partitions(ctx, name.Base())
		if err == nil && name.Partition < n {
			return true, nil
		}
	}
	_, err := s.store.Get(ctx, TopicKey(name))
	if err == nil {
		return true, nil
	}
	if errors.Is(err, metadata.ErrNotFound) {
		return false, nil
	}
	return false, fmt.Errorf("%w: %w", wire.ErrMetadata, err)
}

// ListTopics lists the topics of namespace "tenant/ns" in the given mode, partitions one
// by one, sorted.
func (s *Server) ListTopics(ctx context.Context, namespace string, mode pb.CommandGetTopicsOfNamespace_Mode) ([]string, error) {
	want := func(domain string) bool {
		switch mode {
		case pb.CommandGetTopicsOfNamespace_PERSISTENT:
			return domain == domainPersistent
		case pb.CommandGetTopicsOfNamespace_NON_PERSISTENT:
			return domain == domainNonPersistent
		}
		return true
	}
	seen := map[string]bool{}
	// Keys under a root are <root>/<tenant>/<namespace>/<domain>/<local>.
	for _, root := range []string{TopicsRoot, PartitionedTopicsRoot} {
		prefix := root + "/" + namespace + "/"
		kvs, err := s.store.List(ctx, prefix)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", wire.ErrMetadata, err)
		}
		for _, kv := range kvs {
			domain, local, ok := strings.Cut(strings.TrimPrefix(kv.Key, prefix), "/")
			if !ok || strings.Contains(local, "/") || !want(domain) {
				continue
			}
			base := domain + "://" + namespace + "/" + local
			if root == TopicsRoot {
				seen[base] = true
				continue
			}
			var pm partitionedMeta
			if json.Unmarshal(kv.Value, &pm) != nil {
				continue
			}
			for i := 0; i < pm.Partitions; i++ {
				seen[base+partitionSuffix+fmt.Sprint(i)] = true
			}
		}
	}
	// Topics loaded on this broker but created before records existed are listed too.
	for _, t := range s.loadedTopics() {
		if t.name.NamespaceName() == namespace && want(t.name.Domain) {
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

// getTopic returns the loaded topic, loading it if needed. create says whether the caller
// may create it (auto-creation permitting); otherwise a topic that is not recorded is
// wire.ErrTopicNotFound.
func (s *Server) getTopic(ctx context.Context, name TopicName, create bool) (*topic, error) {
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

func (s *Server) loadTopic(ctx context.Context, name TopicName, create bool) (*topic, error) {
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
		if err := s.checkNamespace(ctx, name); err != nil {
			return nil, err
		}
		if err := s.CreateTopic(ctx, name, 0); err != nil && !errors.Is(err, metadata.ErrBadVersion) {
			return nil, fmt.Errorf("%w: create %s: %w", wire.ErrMetadata, name, err)
		}
	}
	t := newTopic(s, name)
	if name.Persistent() {
		l, err := s.logs.open(ctx, name.ManagedLedgerName())
		if err != nil {
			return nil, fmt.Errorf("%w: open %s: %w", wire.ErrPersistence, name, err)
		}
		t.log = l
		if err := s.applyPolicies(ctx, t); err != nil {
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
