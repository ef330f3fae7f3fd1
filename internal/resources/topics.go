package resources

import (
	"context"
	"encoding/json"
	"sort"
	"strings"

	"github.com/magnetar-io/magnetar/internal/bookieproto"
)

// topicsPrefix holds one key per non-partitioned topic or partition (the broker writes
// "{}" when it creates one); the value may carry the topic's properties.
const topicsPrefix = "/admin/topics/"

// TopicRecord is the JSON value under a non-partitioned topic's key.
type TopicRecord struct {
	Properties map[string]string `json:"properties,omitempty"`
}

func topicKey(domain, tenant, ns, topic string) string {
	return topicsPrefix + tenant + "/" + ns + "/" + domain + "/" + topic
}

// Topic returns a non-partitioned topic's record; ErrNotFound if it is not recorded.
func (r *Resources) Topic(ctx context.Context, domain, tenant, ns, topic string) (TopicRecord, error) {
	var t TopicRecord
	_, err := r.get(ctx, topicKey(domain, tenant, ns, topic), &t)
	return t, err
}

// CreateTopic records that a non-partitioned topic (or a partition) exists, with an empty
// record ("{}"); ErrAlreadyExists if it is recorded already.
func (r *Resources) CreateTopic(ctx context.Context, domain, tenant, ns, topic string) error {
	return r.create(ctx, topicKey(domain, tenant, ns, topic), TopicRecord{})
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
	for _, root := range []string{topicsPrefix, partitionedPrefix} {
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
			if root == topicsPrefix {
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

// Bookies lists the registered bookies (writable and read-only), sorted by address.
func (r *Resources) Bookies(ctx context.Context) ([]bookieproto.Registration, error) {
	kvs, err := r.store.List(ctx, bookieproto.RegistrationPrefix)
	if err != nil {
		return nil, err
	}
	out := make([]bookieproto.Registration, 0, len(kvs))
	for _, kv := range kvs {
		var reg bookieproto.Registration
		if json.Unmarshal(kv.Value, &reg) != nil || reg.Address == "" {
			reg = bookieproto.Registration{Address: strings.TrimPrefix(kv.Key, bookieproto.RegistrationPrefix)}
		}
		out = append(out, reg)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Address < out[j].Address })
	return out, nil
}
