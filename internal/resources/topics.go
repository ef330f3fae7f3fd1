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
