package resources

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/magnetar-io/magnetar/internal/metadata"
)

// TopicPolicies are a topic's own policies, overriding its namespace's. Field names are
// Pulsar's TopicPolicies JSON. Nil fields are unset (the namespace value applies).
type TopicPolicies struct {
	MessageTTLInSeconds  *int                    `json:"messageTTLInSeconds,omitempty"`
	RetentionPolicies    *RetentionPolicies      `json:"retentionPolicies,omitempty"`
	BackLogQuotaMap      map[string]BacklogQuota `json:"backLogQuotaMap,omitempty"`
	DeduplicationEnabled *bool                   `json:"deduplicationEnabled,omitempty"`
	MaxProducerPerTopic  *int                    `json:"maxProducerPerTopic,omitempty"`
	MaxConsumerPerTopic  *int                    `json:"maxConsumerPerTopic,omitempty"`

	Persistence                          *PersistencePolicies              `json:"persistence,omitempty"`
	MaxUnackedMessagesOnConsumer         *int                              `json:"maxUnackedMessagesOnConsumer,omitempty"`
	MaxUnackedMessagesOnSubscription     *int                              `json:"maxUnackedMessagesOnSubscription,omitempty"`
	MaxConsumersPerSubscription          *int                              `json:"maxConsumersPerSubscription,omitempty"`
	MaxSubscriptionsPerTopic             *int                              `json:"maxSubscriptionsPerTopic,omitempty"`
	MaxMessageSize                       *int                              `json:"maxMessageSize,omitempty"`
	DeduplicationSnapshotIntervalSeconds *int                              `json:"deduplicationSnapshotIntervalSeconds,omitempty"`
	SchemaValidationEnforced             *bool                             `json:"schemaValidationEnforced,omitempty"`
	SchemaCompatibilityStrategy          *string                           `json:"schemaCompatibilityStrategy,omitempty"`
	DelayedDelivery                      *DelayedDeliveryPolicies          `json:"delayedDelivery,omitempty"`
	DispatchRate                         *DispatchRate                     `json:"dispatchRate,omitempty"`
	SubscriptionDispatchRate             *DispatchRate                     `json:"subscriptionDispatchRate,omitempty"`
	ReplicatorDispatchRate               *DispatchRate                     `json:"replicatorDispatchRate,omitempty"`
	PublishRate                          *PublishRate                      `json:"publishRate,omitempty"`
	SubscribeRate                        *SubscribeRate                    `json:"subscribeRate,omitempty"`
	OffloadPolicies                      *OffloadPolicies                  `json:"offloadPolicies,omitempty"`
	AutoSubscriptionCreation             *AutoSubscriptionCreationOverride `json:"autoSubscriptionCreation,omitempty"`
	ReplicationClusters                  []string                          `json:"replicationClusters,omitempty"`
	CompactionThreshold                  *int64                            `json:"compactionThreshold,omitempty"`
	InactiveTopicPolicies                *InactiveTopicPolicies            `json:"inactiveTopicPolicies,omitempty"`
	// IcebergPolicies override the namespace's field by field (ours; internal/lakehouse).
	IcebergPolicies *IcebergPolicies `json:"icebergPolicies,omitempty"`
}

// TopicPoliciesKey is the key of a topic's policies: <root>/<tenant>/<ns>/<domain>/<topic>.
func TopicPoliciesKey(domain, tenant, ns, topic string) string {
	return TopicPoliciesRoot + "/" + tenant + "/" + ns + "/" + domain + "/" + topic
}

// TopicPolicies returns a topic's policies; a topic without any has all fields unset.
func (r *Resources) TopicPolicies(ctx context.Context, domain, tenant, ns, topic string) (TopicPolicies, error) {
	var p TopicPolicies
	if err := checkNames(tenant, ns); err != nil {
		return p, err
	}
	_, err := r.get(ctx, TopicPoliciesKey(domain, tenant, ns, topic), &p)
	if errors.Is(err, ErrNotFound) {
		return TopicPolicies{}, nil
	}
	return p, err
}

// UpdateTopicPolicies changes a topic's policies by read-modify-CAS, creating the record on
// first use.
func (r *Resources) UpdateTopicPolicies(ctx context.Context, domain, tenant, ns, topic string, modify func(*TopicPolicies) error) error {
	if err := checkNames(tenant, ns); err != nil {
		return err
	}
	key := TopicPoliciesKey(domain, tenant, ns, topic)
	for {
		var p TopicPolicies
		ver, err := r.get(ctx, key, &p)
		switch {
		case errors.Is(err, ErrNotFound):
			ver = metadata.NotExists
		case err != nil:
			return err
		}
		if err := modify(&p); err != nil {
			return err
		}
		b, err := json.Marshal(&p)
		if err != nil {
			return fmt.Errorf("resources: encoding topic policies: %w", err)
		}
		_, err = r.store.Put(ctx, key, b, ver)
		if errors.Is(err, metadata.ErrBadVersion) {
			continue
		}
		return err
	}
}

// DeleteTopicPolicies removes a topic's policies (topic deletion); absent is fine.
func (r *Resources) DeleteTopicPolicies(ctx context.Context, domain, tenant, ns, topic string) error {
	err := r.store.Delete(ctx, TopicPoliciesKey(domain, tenant, ns, topic), metadata.AnyVersion)
	if errors.Is(err, metadata.ErrNotFound) {
		return nil
	}
	return err
}
