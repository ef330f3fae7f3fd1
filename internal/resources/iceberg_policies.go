package resources

// IcebergPolicies say whether and how a topic with a schema is written as an Iceberg table
// (internal/lakehouse). A topic's own policies override its namespace's field by field;
// unset fields take the defaults named here.
type IcebergPolicies struct {
	// Enabled writes the topic's records into its table (default false).
	Enabled *bool `json:"enabled,omitempty"`
	// Partitioning of new tables by __publish_time__: "hour" (default), "day", "month",
	// "year" or "none".
	Partitioning string `json:"partitioning,omitempty"`
	// RetentionHours removes data files whose rows were all published longer ago than this,
	// independently of the topic's retention (unset or -1: keep forever).
	RetentionHours *int `json:"retentionHours,omitempty"`
	// DeadLetterTopic receives the records that cannot be converted (default
	// <topic>-iceberg-DLQ, icebergDeadLetterTopicSuffix).
	DeadLetterTopic string `json:"deadLetterTopic,omitempty"`
}
