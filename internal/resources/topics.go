package resources

import (
	"context"
	"encoding/json"
	"strings"
	"time"
)

// TopicRecord is the JSON value under a non-partitioned topic's key.
type TopicRecord struct {
	Properties map[string]string `json:"properties,omitempty"`
	// CreationTimestamp is when the record was created (Unix ms; 0 in records written
	// before it existed): the topic stats' topicCreationTimeStamp.
	CreationTimestamp int64 `json:"creationTimestamp,omitempty"`
}

func topicKey(domain, tenant, ns, topic string) string {
	return TopicsPrefix + tenant + "/" + ns + "/" + domain + "/" + topic
}

// Topic returns a non-partitioned topic's record; ErrNotFound if it is not recorded.
func (r *Resources) Topic(ctx context.Context, domain, tenant, ns, topic string) (TopicRecord, error) {
	var t TopicRecord
	_, err := r.get(ctx, topicKey(domain, tenant, ns, topic), &t)
	return t, err
}

// CreateTopic records that a non-partitioned topic (or a partition) exists, with its
// creation time; ErrAlreadyExists if it is recorded already.
func (r *Resources) CreateTopic(ctx context.Context, domain, tenant, ns, topic string) error {
	return r.create(ctx, topicKey(domain, tenant, ns, topic), TopicRecord{CreationTimestamp: time.Now().UnixMilli()})
}

// DeleteTopic removes a non-partitioned topic's record; ErrNotFound if there is none.
func (r *Resources) DeleteTopic(ctx context.Context, domain, tenant, ns, topic string) error {
	return r.del(ctx, topicKey(domain, tenant, ns, topic))
}

// NamespaceTopics lists the topics recorded in namespace ("tenant/ns", or
// "tenant/cluster/ns" for legacy names) as full names ("domain://tenant/ns/local"):
// non-partitioned topics and partitions in topics, partitioned topics with their partition
// counts in partitioned. Records that cannot be read are left out.
func (r *Resources) NamespaceTopics(ctx context.Context, namespace string) (topics []string, partitioned map[string]int, err error) {
	partitioned = map[string]int{}
	for _, root := range []string{TopicsPrefix, PartitionedTopicsPrefix} {
		prefix := root + namespace + "/"
		kvs, err := r.store.List(ctx, prefix)
		if err != nil {
			return nil, nil, err
		}
		for _, kv := range kvs {
			// Keys under a root are <root><tenant>/<namespace>/<domain>/<local>.
			domain, local, ok := strings.Cut(strings.TrimPrefix(kv.Key, prefix), "/")
			if !ok || strings.Contains(local, "/") {
				continue
			}
			name := domain + "://" + namespace + "/" + local
			if root == TopicsPrefix {
				topics = append(topics, name)
				continue
			}
			var m PartitionedTopicMetadata
			if json.Unmarshal(kv.Value, &m) == nil {
				partitioned[name] = m.Partitions
			}
		}
	}
	return topics, partitioned, nil
}

// UpdateTopic changes a non-partitioned topic's record by read-modify-CAS.
func (r *Resources) UpdateTopic(ctx context.Context, domain, tenant, ns, topic string, modify func(*TopicRecord) error) error {
	return update(ctx, r, topicKey(domain, tenant, ns, topic), modify)
}
