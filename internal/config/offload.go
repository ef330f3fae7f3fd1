package config

import "errors"

// OffloadConfig is tiered storage (internal/offload): the driver that closed ledgers are
// offloaded with, where, and the broker defaults of the offload policies that namespaces and
// topics override (offloadPolicies). Key names are Pulsar's broker.conf keys; the generic
// managedLedgerOffload{Bucket,Region,ServiceEndpoint,...} keys win over the driver-specific
// ones, as in Pulsar. Empty and 0 mean unset. Credentials of aws-s3/S3 come from the AWS
// default chain unless s3ManagedLedgerOffloadCredentialId/Secret are set; azureblob reads
// AZURE_STORAGE_ACCOUNT and AZURE_STORAGE_ACCESS_KEY.
type OffloadConfig struct {
	Driver         string `key:"managedLedgerOffloadDriver" help:"tiered-storage driver: aws-s3, S3, google-cloud-storage, azureblob or filesystem (empty: no offload)"`
	MaxThreads     int    `key:"managedLedgerOffloadMaxThreads" help:"ledger offloads running at once"`
	ReadThreads    int    `key:"managedLedgerOffloadReadThreads" help:"range reads from tiered storage running at once"`
	PrefetchRounds int    `key:"managedLedgerOffloadPrefetchRounds" help:"chunks read ahead of a sequential reader of an offloaded ledger"`
	// Thresholds: -1 never; 0 as soon as a ledger is closed.
	ThresholdBytes   int64  `key:"managedLedgerOffloadAutoTriggerSizeThresholdBytes" help:"offload the oldest ledgers while a topic keeps more than this on the bookies (-1: never)"`
	ThresholdSeconds int64  `key:"managedLedgerOffloadThresholdInSeconds" help:"offload ledgers closed longer ago than this (-1: never)"`
	DeletionLagMs    int64  `key:"managedLedgerOffloadDeletionLagMs" help:"delete the bookie copy this long after an offload completed (-1: never)"`
	ReadPriority     string `key:"managedLedgerDataReadPriority" help:"reads of offloaded ledgers: tiered-storage-first or bookkeeper-first"`

	Bucket          string `key:"managedLedgerOffloadBucket" help:"bucket (container) of the object-store drivers"`
	Region          string `key:"managedLedgerOffloadRegion" help:"region of the object store"`
	ServiceEndpoint string `key:"managedLedgerOffloadServiceEndpoint" help:"address of an S3-compatible store, Azure blob service or GCS emulator"`
	MaxBlockSize    int    `key:"managedLedgerOffloadMaxBlockSizeInBytes" help:"bytes per block (multipart part) of an offloaded ledger"`
	ReadBufferSize  int    `key:"managedLedgerOffloadReadBufferSizeInBytes" help:"bytes per range read (and index seek point) of an offloaded ledger"`
	ReadCacheSize   int64  `key:"managedLedgerOffloadReadCacheSizeInBytes" help:"chunk cache shared by the readers of offloaded ledgers, in bytes"`
	// MaxOffloaders bounds the offloaders built for namespace/topic offload policies that
	// name their own driver or bucket (one per distinct driver configuration in use).
	MaxOffloaders int `key:"managedLedgerOffloadMaxOffloaders" help:"offloaders open at once for distinct namespace/topic offload policies (drivers, buckets); 0: 16"`

	S3Bucket           string `key:"s3ManagedLedgerOffloadBucket" help:"S3 bucket"`
	S3Region           string `key:"s3ManagedLedgerOffloadRegion" help:"S3 region"`
	S3ServiceEndpoint  string `key:"s3ManagedLedgerOffloadServiceEndpoint" help:"S3 endpoint (an S3-compatible server)"`
	S3MaxBlockSize     int    `key:"s3ManagedLedgerOffloadMaxBlockSizeInBytes" help:"S3 block (part) size, at least 5 MiB"`
	S3ReadBufferSize   int    `key:"s3ManagedLedgerOffloadReadBufferSizeInBytes" help:"S3 range-read size"`
	S3CredentialID     string `key:"s3ManagedLedgerOffloadCredentialId" help:"S3 access key id (empty: the AWS default chain)"`
	S3CredentialSecret string `key:"s3ManagedLedgerOffloadCredentialSecret" help:"S3 secret access key"`

	GCSBucket                string `key:"gcsManagedLedgerOffloadBucket" help:"GCS bucket"`
	GCSRegion                string `key:"gcsManagedLedgerOffloadRegion" help:"GCS region"`
	GCSMaxBlockSize          int    `key:"gcsManagedLedgerOffloadMaxBlockSizeInBytes" help:"GCS block size"`
	GCSReadBufferSize        int    `key:"gcsManagedLedgerOffloadReadBufferSizeInBytes" help:"GCS range-read size"`
	GCSServiceAccountKeyFile string `key:"gcsManagedLedgerOffloadServiceAccountKeyFile" help:"GCS service-account JSON key (empty: default credentials)"`

	FileSystemURI         string `key:"fileSystemURI" help:"filesystem driver: file:///dir or hdfs://namenode:port/dir"`
	FileSystemProfilePath string `key:"fileSystemProfilePath" help:"Hadoop profile of the filesystem driver (read by Pulsar; unused here)"`
}

// DefaultOffloadConfig returns Pulsar's defaults: no driver, never by threshold, bookie
// copies deleted 4 h after an offload, reads from tiered storage first.
func DefaultOffloadConfig() OffloadConfig {
	return OffloadConfig{
		MaxThreads: 2, ReadThreads: 2, PrefetchRounds: 1, MaxOffloaders: 16,
		ThresholdBytes: -1, ThresholdSeconds: -1, DeletionLagMs: 4 * 3600 * 1000,
		ReadPriority: "tiered-storage-first",
	}
}

// Validate checks the broker-level keys; internal/offload checks the driver's settings.
func (c *OffloadConfig) Validate() error {
	return errors.Join(
		OneOf("managedLedgerOffloadDriver", c.Driver, "", "S3", "aws-s3", "google-cloud-storage", "azureblob", "filesystem"),
		Between("managedLedgerOffloadMaxThreads", c.MaxThreads, 1, 256),
		Between("managedLedgerOffloadReadThreads", c.ReadThreads, 1, 256),
		Between("managedLedgerOffloadPrefetchRounds", c.PrefetchRounds, 0, 64),
		AtLeast("managedLedgerOffloadAutoTriggerSizeThresholdBytes", c.ThresholdBytes, -1),
		AtLeast("managedLedgerOffloadThresholdInSeconds", c.ThresholdSeconds, -1),
		AtLeast("managedLedgerOffloadDeletionLagMs", c.DeletionLagMs, -1),
		OneOf("managedLedgerDataReadPriority", c.ReadPriority, "tiered-storage-first", "bookkeeper-first"),
		AtLeast("managedLedgerOffloadReadCacheSizeInBytes", c.ReadCacheSize, 0),
		Between("managedLedgerOffloadMaxOffloaders", c.MaxOffloaders, 0, 1024),
	)
}
