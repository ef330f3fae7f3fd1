package resources

import "context"

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
