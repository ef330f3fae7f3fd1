package resources

// Policies is a namespace's policies, with Pulsar's JSON field names (pulsaradmin's
// utils.Policies) so that tools decode what we return. Pointer fields are unset (inherit the
// broker default) when nil.
type Policies struct {
	Bundles                   *BundlesData               `json:"bundles,omitempty"`
	Persistence               *PersistencePolicies       `json:"persistence,omitempty"`
	RetentionPolicies         *RetentionPolicies         `json:"retention_policies,omitempty"`
	BacklogQuotaMap           map[string]BacklogQuota    `json:"backlog_quota_map,omitempty"`
	MessageTTLInSeconds       *int                       `json:"message_ttl_in_seconds,omitempty"`
	DeduplicationEnabled      *bool                      `json:"deduplicationEnabled,omitempty"`
	AutoTopicCreationOverride *AutoTopicCreationOverride `json:"autoTopicCreationOverride,omitempty"`
	ReplicationClusters       []string                   `json:"replication_clusters"`
	AuthPolicies              AuthPolicies               `json:"auth_policies"`
	// SubscriptionAuthMode is Pulsar's subscription_auth_mode: "None" (or empty, unset) or
	// "Prefix" (a role's subscriptions must be named <role>-...; internal/auth enforces it).
	SubscriptionAuthMode      string `json:"subscription_auth_mode,omitempty"`
	SchemaCompatibility       string `json:"schema_compatibility_strategy,omitempty"`
	SchemaAutoUpdateCompat    string `json:"schema_auto_update_compatibility_strategy,omitempty"`
	SchemaValidationEnforced  bool   `json:"schema_validation_enforced"`
	IsAllowAutoUpdateSchema   *bool  `json:"is_allow_auto_update_schema,omitempty"`
	MaxProducersPerTopic      *int   `json:"max_producers_per_topic,omitempty"`
	MaxConsumersPerTopic      *int   `json:"max_consumers_per_topic,omitempty"`
	MaxConsumersPerSub        *int   `json:"max_consumers_per_subscription,omitempty"`
	MaxSubscriptionsPerTopic  *int   `json:"max_subscriptions_per_topic,omitempty"`
	MaxTopicsPerNamespace     *int   `json:"max_topics_per_namespace,omitempty"`
	MaxUnackedPerConsumer     *int   `json:"max_unacked_messages_per_consumer,omitempty"`
	MaxUnackedPerSubscription *int   `json:"max_unacked_messages_per_subscription,omitempty"`
	SubscriptionExpiration    *int   `json:"subscription_expiration_time_minutes,omitempty"`
	CompactionThreshold       *int64 `json:"compaction_threshold,omitempty"`
	// Offload: offload_policies wins over the three legacy fields, which Pulsar keeps for
	// set-offload-threshold / set-offload-deletion-lag (topics.resolveOffload merges them).
	OffloadPolicies           *OffloadPolicies     `json:"offload_policies,omitempty"`
	OffloadThreshold          *int64               `json:"offload_threshold,omitempty"`
	OffloadThresholdInSeconds *int64               `json:"offload_threshold_in_seconds,omitempty"`
	OffloadDeletionLagMs      *int64               `json:"offload_deletion_lag_ms,omitempty"`
	BookieAffinityGroup       *BookieAffinityGroup `json:"bookie_affinity_group,omitempty"`
	// Rates are per cluster in Pulsar's Policies (keyed by cluster name).
	PublishMaxMessageRate    map[string]PublishRate   `json:"publishMaxMessageRate,omitempty"`
	TopicDispatchRate        map[string]DispatchRate  `json:"topicDispatchRate,omitempty"`
	SubscriptionDispatchRate map[string]DispatchRate  `json:"subscriptionDispatchRate,omitempty"`
	ReplicatorDispatchRate   map[string]DispatchRate  `json:"replicatorDispatchRate,omitempty"`
	ClusterSubscribeRate     map[string]SubscribeRate `json:"clusterSubscribeRate,omitempty"`
	Properties               map[string]string        `json:"properties,omitempty"`
	Deleted                  bool                     `json:"deleted"`
	// IcebergPolicies is ours (the lakehouse, internal/lakehouse): whether the namespace's
	// topics with a schema are also Iceberg tables, and how.
	IcebergPolicies *IcebergPolicies `json:"iceberg_policies,omitempty"`
}

// BundlesData is the namespace's split of the 32-bit topic-name hash ring.
type BundlesData struct {
	Boundaries []string `json:"boundaries"`
	NumBundles int      `json:"numBundles"`
}

// PersistencePolicies sets E/Qw/Qa for the namespace's ledgers.
type PersistencePolicies struct {
	BookkeeperEnsemble             int     `json:"bookkeeperEnsemble"`
	BookkeeperWriteQuorum          int     `json:"bookkeeperWriteQuorum"`
	BookkeeperAckQuorum            int     `json:"bookkeeperAckQuorum"`
	ManagedLedgerMaxMarkDeleteRate float64 `json:"managedLedgerMaxMarkDeleteRate"`
}

// RetentionPolicies keeps acknowledged data for a time and size (-1: unlimited).
type RetentionPolicies struct {
	RetentionTimeInMinutes int   `json:"retentionTimeInMinutes"`
	RetentionSizeInMB      int64 `json:"retentionSizeInMB"`
}

// BacklogQuota bounds a subscription backlog by size and/or age.
type BacklogQuota struct {
	LimitSize int64  `json:"limitSize"`
	LimitTime int64  `json:"limitTime"`
	Policy    string `json:"policy"`
}

// AutoTopicCreationOverride overrides the broker's auto topic creation for a namespace.
type AutoTopicCreationOverride struct {
	AllowAutoTopicCreation bool   `json:"allowAutoTopicCreation"`
	TopicType              string `json:"topicType"`
	DefaultNumPartitions   int    `json:"defaultNumPartitions,omitempty"`
}

// AuthPolicies holds namespace, topic and subscription permissions.
type AuthPolicies struct {
	NamespaceAuth         map[string][]string            `json:"namespace_auth"`
	DestinationAuth       map[string]map[string][]string `json:"destination_auth"`
	SubscriptionAuthRoles map[string][]string            `json:"subscription_auth_roles"`
}

// BookieAffinityGroup names the bookie groups a namespace's ledgers prefer.
type BookieAffinityGroup struct {
	Primary   string `json:"bookkeeperAffinityGroupPrimary"`
	Secondary string `json:"bookkeeperAffinityGroupSecondary,omitempty"`
}

// DispatchRate throttles dispatch (Pulsar's DispatchRateImpl; -1 or 0: unlimited).
type DispatchRate struct {
	RateInMsg             int   `json:"dispatchThrottlingRateInMsg"`
	RateInByte            int64 `json:"dispatchThrottlingRateInByte"`
	RelativeToPublishRate bool  `json:"relativeToPublishRate"`
	RatePeriodInSecond    int   `json:"ratePeriodInSecond"`
}

// PublishRate throttles publishing (Pulsar's PublishRate; -1 or 0: unlimited).
type PublishRate struct {
	RateInMsg  int   `json:"publishThrottlingRateInMsg"`
	RateInByte int64 `json:"publishThrottlingRateInByte"`
}

// SubscribeRate throttles subscribes per consumer name (Pulsar's SubscribeRate).
type SubscribeRate struct {
	PerConsumer        int `json:"subscribeThrottlingRatePerConsumer"`
	RatePeriodInSecond int `json:"ratePeriodInSecond"`
}

// DelayedDeliveryPolicies turn delayed delivery on or off (Pulsar's DelayedDeliveryPolicies).
type DelayedDeliveryPolicies struct {
	TickTime         float64 `json:"tickTime"`
	Active           bool    `json:"active"`
	MaxDelayInMillis int64   `json:"maxDelayInMillis,omitempty"`
}

// InactiveTopicPolicies delete inactive topics (Pulsar's InactiveTopicPolicies).
type InactiveTopicPolicies struct {
	DeleteWhileInactive        bool   `json:"deleteWhileInactive"`
	MaxInactiveDurationSeconds int    `json:"maxInactiveDurationSeconds"`
	InactiveTopicDeleteMode    string `json:"inactiveTopicDeleteMode,omitempty"`
}

// AutoSubscriptionCreationOverride overrides allowAutoSubscriptionCreation.
type AutoSubscriptionCreationOverride struct {
	AllowAutoSubscriptionCreation bool `json:"allowAutoSubscriptionCreation"`
}
