package config

import "errors"

// PoliciesConfig is the broker-wide default of the namespace and topic policies the broker
// enforces on live topics (deduplication, message TTL, backlog quota, producer/consumer
// limits), plus the bounds of their machinery. Namespace policies override these defaults
// and topic policies override the namespace's. Key names are Pulsar's broker.conf keys.
type PoliciesConfig struct {
	// BrokerDeduplicationEnabled turns producer deduplication on for every namespace that
	// does not say otherwise.
	BrokerDeduplicationEnabled bool `key:"brokerDeduplicationEnabled" help:"deduplicate by producer name and sequence id unless a namespace or topic policy says otherwise"`
	// BrokerDeduplicationMaxNumberOfProducers bounds the producers whose last sequence id a
	// topic tracks; the least recently used one is forgotten beyond it.
	BrokerDeduplicationMaxNumberOfProducers int `key:"brokerDeduplicationMaxNumberOfProducers" help:"producers tracked for deduplication per topic"`
	// BrokerDeduplicationEntriesInterval is how many entries are appended between two
	// snapshots of the deduplication state (the most a restart replays).
	BrokerDeduplicationEntriesInterval int `key:"brokerDeduplicationEntriesInterval" help:"entries between snapshots of a topic's deduplication state"`
	// BrokerDeduplicationSnapshotIntervalSeconds also takes a snapshot when this much time
	// passed with entries appended since the last one (0: only by entry count).
	BrokerDeduplicationSnapshotIntervalSeconds int `key:"brokerDeduplicationSnapshotIntervalSeconds" help:"seconds between time-based deduplication snapshots (0: off)"`

	// TTLDurationDefaultInSeconds is the message TTL of namespaces without one (0: none).
	TTLDurationDefaultInSeconds int `key:"ttlDurationDefaultInSeconds" help:"default message TTL in seconds (0: messages never expire)"`
	// MessageExpiryCheckIntervalInMinutes is how often TTL, backlog quotas and retention
	// are applied to loaded topics. Pulsar's key is minutes; ours adds a seconds key for tests.
	MessageExpiryCheckIntervalInMinutes int `key:"messageExpiryCheckIntervalInMinutes" help:"minutes between message TTL checks of loaded topics"`
	// PolicyCheckIntervalSeconds, when > 0, overrides the two intervals above (tests).
	PolicyCheckIntervalSeconds int `key:"policyCheckIntervalSeconds" help:"seconds between TTL and backlog-quota checks; overrides the minute keys when > 0"`
	// BacklogQuotaCheckIntervalInSeconds is how often backlog quotas are checked.
	BacklogQuotaCheckIntervalInSeconds int `key:"backlogQuotaCheckIntervalInSeconds" help:"seconds between backlog quota checks of loaded topics"`
	// BacklogQuotaDefaultLimitBytes / BacklogQuotaDefaultLimitSecond / BacklogQuotaDefaultRetentionPolicy
	// are the backlog quota of namespaces without one (limits <= 0: none).
	BacklogQuotaDefaultLimitBytes      int64  `key:"backlogQuotaDefaultLimitBytes" help:"default backlog quota in bytes (-1: none)"`
	BacklogQuotaDefaultLimitSecond     int64  `key:"backlogQuotaDefaultLimitSecond" help:"default time backlog quota in seconds (-1: none)"`
	BacklogQuotaDefaultRetentionPolicy string `key:"backlogQuotaDefaultRetentionPolicy" help:"default backlog quota policy: producer_request_hold, producer_exception or consumer_backlog_eviction"`

	// MaxProducersPerTopic / MaxConsumersPerTopic are the defaults of the namespace policies
	// of the same name (0: unlimited).
	MaxProducersPerTopic int `key:"maxProducersPerTopic" help:"most producers per topic (0: unlimited)"`
	MaxConsumersPerTopic int `key:"maxConsumersPerTopic" help:"most consumers per topic (0: unlimited)"`
	// MaxConsumersPerSubscription, MaxSubscriptionsPerTopic and MaxTopicsPerNamespace are
	// the defaults of the policies of the same name (0: unlimited). Each subscription and
	// topic holds broker memory (a cursor, its dispatcher, its ledger list), so a client
	// that creates them in a loop is bounded by these, as Pulsar bounds it.
	MaxConsumersPerSubscription int `key:"maxConsumersPerSubscription" help:"most consumers per subscription (0: unlimited)"`
	MaxSubscriptionsPerTopic    int `key:"maxSubscriptionsPerTopic" help:"most subscriptions per topic (0: unlimited)"`
	MaxTopicsPerNamespace       int `key:"maxTopicsPerNamespace" help:"most topics per namespace, partitions counted one by one (0: unlimited)"`
	// MaxPublishRatePerTopicInMessages / InBytes are the default publish rate of a topic
	// per second (0: unlimited); the publishRate policies override them.
	MaxPublishRatePerTopicInMessages int64 `key:"maxPublishRatePerTopicInMessages" help:"messages per second a topic accepts before its producers are paused (0: unlimited)"`
	MaxPublishRatePerTopicInBytes    int64 `key:"maxPublishRatePerTopicInBytes" help:"bytes per second a topic accepts before its producers are paused (0: unlimited)"`
	// BrokerServiceCompactionThresholdInBytes is the compactionThreshold of namespaces and
	// topics without one: a topic is compacted when the backlog of its __compaction cursor
	// (its whole size before the first compaction) exceeds it (0: never automatically).
	BrokerServiceCompactionThresholdInBytes int64 `key:"brokerServiceCompactionThresholdInBytes" help:"compact a topic when its compaction backlog exceeds this many bytes (0: only on request)"`
	// BrokerServiceCompactionMonitorIntervalInSeconds is how often loaded topics are checked
	// against their compaction threshold.
	BrokerServiceCompactionMonitorIntervalInSeconds int `key:"brokerServiceCompactionMonitorIntervalInSeconds" help:"seconds between checks of topics against their compaction threshold"`
}

// DefaultPoliciesConfig returns Pulsar's broker.conf defaults.
func DefaultPoliciesConfig() PoliciesConfig {
	return PoliciesConfig{
		BrokerDeduplicationMaxNumberOfProducers:    10000,
		BrokerDeduplicationEntriesInterval:         1000,
		BrokerDeduplicationSnapshotIntervalSeconds: 120,
		MessageExpiryCheckIntervalInMinutes:        5,
		BacklogQuotaCheckIntervalInSeconds:         60,
		BacklogQuotaDefaultLimitBytes:              -1,
		BacklogQuotaDefaultLimitSecond:             -1,
		BacklogQuotaDefaultRetentionPolicy:         "producer_request_hold",

		BrokerServiceCompactionMonitorIntervalInSeconds: 60,
	}
}

// Validate checks the policy defaults and bounds.
func (c *PoliciesConfig) Validate() error {
	return errors.Join(
		Between("brokerDeduplicationMaxNumberOfProducers", c.BrokerDeduplicationMaxNumberOfProducers, 1, 1_000_000),
		Between("brokerDeduplicationEntriesInterval", c.BrokerDeduplicationEntriesInterval, 1, 1_000_000),
		AtLeast("brokerDeduplicationSnapshotIntervalSeconds", c.BrokerDeduplicationSnapshotIntervalSeconds, 0),
		AtLeast("ttlDurationDefaultInSeconds", c.TTLDurationDefaultInSeconds, 0),
		Between("messageExpiryCheckIntervalInMinutes", c.MessageExpiryCheckIntervalInMinutes, 1, 1440),
		Between("policyCheckIntervalSeconds", c.PolicyCheckIntervalSeconds, 0, 86400),
		Between("backlogQuotaCheckIntervalInSeconds", c.BacklogQuotaCheckIntervalInSeconds, 1, 86400),
		OneOf("backlogQuotaDefaultRetentionPolicy", c.BacklogQuotaDefaultRetentionPolicy, "producer_request_hold", "producer_exception", "consumer_backlog_eviction"),
		AtLeast("maxProducersPerTopic", c.MaxProducersPerTopic, 0),
		AtLeast("maxConsumersPerTopic", c.MaxConsumersPerTopic, 0),
		AtLeast("maxConsumersPerSubscription", c.MaxConsumersPerSubscription, 0),
		AtLeast("maxSubscriptionsPerTopic", c.MaxSubscriptionsPerTopic, 0),
		AtLeast("maxTopicsPerNamespace", c.MaxTopicsPerNamespace, 0),
		AtLeast("maxPublishRatePerTopicInMessages", c.MaxPublishRatePerTopicInMessages, 0),
		AtLeast("maxPublishRatePerTopicInBytes", c.MaxPublishRatePerTopicInBytes, 0),
		AtLeast("brokerServiceCompactionThresholdInBytes", c.BrokerServiceCompactionThresholdInBytes, 0),
		Between("brokerServiceCompactionMonitorIntervalInSeconds", c.BrokerServiceCompactionMonitorIntervalInSeconds, 1, 86400),
	)
}
