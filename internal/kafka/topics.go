package kafka

import (
	"context"
	"crypto/sha256"
	"fmt"
	"sync"
	"time"
)

// topicCacheTTL is how long a topic's partition count is trusted without asking the
// backend again. A Metadata request always asks, so a client that refreshes metadata after
// CreatePartitions sees the new partitions at once; produce and fetch use the cache.
const topicCacheTTL = 10 * time.Second

type topicCache struct {
	mu sync.Mutex
	m  map[string]cachedTopic
}

type cachedTopic struct {
	partitions int
	at         time.Time
}

func (s *Server) partitionCount(ctx context.Context, full string, fresh bool) (int, error) {
	s.topics.mu.Lock()
	ct, ok := s.topics.m[full]
	s.topics.mu.Unlock()
	if ok && !fresh && time.Since(ct.at) < topicCacheTTL {
		return ct.partitions, nil
	}
	n, err := s.be.Partitions(ctx, full)
	if err != nil {
		s.forgetTopic(full)
		return 0, err
	}
	s.topics.mu.Lock()
	s.topics.m[full] = cachedTopic{partitions: n, at: time.Now()}
	s.topics.mu.Unlock()
	return n, nil
}

func (s *Server) forgetTopic(full string) {
	s.topics.mu.Lock()
	delete(s.topics.m, full)
	s.topics.mu.Unlock()
}

// partitionName is the Pulsar name of Kafka partition i of ref (the topic itself for a
// non-partitioned topic's partition 0).
func partitionName(ref TopicRef, n int, i int32) (string, error) {
	if n == 0 {
		if i != 0 {
			return "", fmt.Errorf("%w: %s has one partition, not %d", ErrUnknownTopic, ref.Kafka, i)
		}
		return ref.Full(), nil
	}
	if i < 0 || int(i) >= n {
		return "", fmt.Errorf("%w: %s has %d partitions, not %d", ErrUnknownTopic, ref.Kafka, n, i)
	}
	return ref.Partition(i), nil
}

// openPartition resolves Kafka topic/partition and opens it on this broker.
func (s *Server) openPartition(ctx context.Context, topic string, i int32) (*partition, TopicRef, error) {
	ref, err := s.namer.Resolve(topic)
	if err != nil {
		return nil, ref, err
	}
	n, err := s.partitionCount(ctx, ref.Full(), false)
	if err != nil {
		return nil, ref, err
	}
	name, err := partitionName(ref, n, i)
	if err != nil {
		return nil, ref, err
	}
	s.mu.Lock()
	p := s.logs[name]
	s.mu.Unlock()
	if p != nil && p.ok() {
		return p, ref, nil
	}
	octx, cancel := context.WithTimeout(ctx, openTimeout)
	defer cancel()
	p, err = s.partition(octx, name)
	return p, ref, err
}

func (p *partition) ok() bool {
	p.mu.Lock()
	broken := p.broken
	p.mu.Unlock()
	if c, ok := p.log.(closableLog); ok && !c.Live() {
		return false
	}
	return broken == nil
}

// topicID is the Kafka topic id Metadata reports: derived from the Pulsar name, so every
// broker reports the same one without storing it.
func topicID(full string) [16]byte {
	sum := sha256.Sum256([]byte(full))
	var id [16]byte
	copy(id[:], sum[:16])
	return id
}
