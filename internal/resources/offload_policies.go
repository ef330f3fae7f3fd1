package resources

// OffloadPolicies is the shape of Pulsar's OffloadPolicies as stored in a namespace's
// Policies (offload_policies) and a topic's TopicPolicies (offloadPolicies), and as the
// broker's managedLedgerOffload* keys read as a policy. Nil fields are unset and inherit
// (topic -> namespace -> broker). internal/offload.Policies is this type with the methods
// that resolve and validate it (Merge, Config, Trigger, Validate).
type OffloadPolicies struct {
	Driver              *string `json:"managedLedgerOffloadDriver,omitempty"`
	MaxThreads          *int    `json:"managedLedgerOffloadMaxThreads,omitempty"`
	ReadThreads         *int    `json:"managedLedgerOffloadReadThreads,omitempty"`
	PrefetchRounds      *int    `json:"managedLedgerOffloadPrefetchRounds,omitempty"`
	ThresholdInBytes    *int64  `json:"managedLedgerOffloadThresholdInBytes,omitempty"`
	ThresholdInSeconds  *int64  `json:"managedLedgerOffloadThresholdInSeconds,omitempty"`
	DeletionLagInMillis *int64  `json:"managedLedgerOffloadDeletionLagInMillis,omitempty"`
	ReadPriority        *string `json:"managedLedgerOffloadedReadPriority,omitempty"`

	S3Region           *string `json:"s3ManagedLedgerOffloadRegion,omitempty"`
	S3Bucket           *string `json:"s3ManagedLedgerOffloadBucket,omitempty"`
	S3ServiceEndpoint  *string `json:"s3ManagedLedgerOffloadServiceEndpoint,omitempty"`
	S3MaxBlockSize     *int    `json:"s3ManagedLedgerOffloadMaxBlockSizeInBytes,omitempty"`
	S3ReadBufferSize   *int    `json:"s3ManagedLedgerOffloadReadBufferSizeInBytes,omitempty"`
	S3CredentialID     *string `json:"s3ManagedLedgerOffloadCredentialId,omitempty"`
	S3CredentialSecret *string `json:"s3ManagedLedgerOffloadCredentialSecret,omitempty"`
	S3Role             *string `json:"s3ManagedLedgerOffloadRole,omitempty"`
	S3RoleSessionName  *string `json:"s3ManagedLedgerOffloadRoleSessionName,omitempty"`

	GCSRegion                *string `json:"gcsManagedLedgerOffloadRegion,omitempty"`
	GCSBucket                *string `json:"gcsManagedLedgerOffloadBucket,omitempty"`
	GCSMaxBlockSize          *int    `json:"gcsManagedLedgerOffloadMaxBlockSizeInBytes,omitempty"`
	GCSReadBufferSize        *int    `json:"gcsManagedLedgerOffloadReadBufferSizeInBytes,omitempty"`
	GCSServiceAccountKeyFile *string `json:"gcsManagedLedgerOffloadServiceAccountKeyFile,omitempty"`

	FileSystemProfilePath *string `json:"fileSystemProfilePath,omitempty"`
	FileSystemURI         *string `json:"fileSystemURI,omitempty"`

	Bucket          *string `json:"managedLedgerOffloadBucket,omitempty"`
	Region          *string `json:"managedLedgerOffloadRegion,omitempty"`
	ServiceEndpoint *string `json:"managedLedgerOffloadServiceEndpoint,omitempty"`
	MaxBlockSize    *int    `json:"managedLedgerOffloadMaxBlockSizeInBytes,omitempty"`
	ReadBufferSize  *int    `json:"managedLedgerOffloadReadBufferSizeInBytes,omitempty"`

	// Ours, same conventions.
	ReadCacheSize *int64 `json:"managedLedgerOffloadReadCacheSizeInBytes,omitempty"`
}
