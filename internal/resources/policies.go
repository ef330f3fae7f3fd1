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
	SchemaCompatibility       string                     `json:"schema_compatibility_strategy,omitempty"`
	SchemaAutoUpdateCompat    string                     `json:"schema_auto_update_compatibility_strategy,omitempty"`
	SchemaValidationEnforced  bool                       `json:"schema_validation_enforced"`
	IsAllowAutoUpdateSchema   *bool                      `json:"is_allow_auto_update_schema,omitempty"`
	MaxProducersPerTopic      *int                       `json:"max_producers_per_topic,omitempty"`
	MaxConsumersPerTopic      *int                       `json:"max_consumers_per_topic,omitempty"`
	MaxConsumersPerSub        *int                       `json:"max_consumers_per_subscription,omitempty"`
	Properties                map[string]string          `json:"properties,omitempty"`
	Deleted                   bool                       `json:"deleted"`
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
