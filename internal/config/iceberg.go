package config

import (
	"errors"
	"strings"
)

// IcebergConfig is the lakehouse (internal/lakehouse): topics with a schema written as
// Apache Iceberg tables into an object store, and the Iceberg REST catalog served on the
// HTTP port under /iceberg. Which topics become tables is a namespace or topic policy
// (icebergPolicies, off by default); these keys say where tables go and how they are
// written. The key names are ours (Pulsar has no such feature), in Pulsar's style.
type IcebergConfig struct {
	Enabled bool `key:"icebergEnabled" help:"run the lakehouse: write topics whose icebergPolicies enable it as Iceberg tables and serve the Iceberg REST catalog under /iceberg"`
	// Warehouse is where tables live: s3://bucket/prefix or file:///dir.
	Warehouse string `key:"icebergWarehouse" help:"where Iceberg tables are written: s3://bucket/prefix or file:///dir"`

	S3Endpoint        string `key:"icebergS3Endpoint" help:"address of an S3-compatible store (empty: AWS); set means path-style addressing"`
	S3Region          string `key:"icebergS3Region" help:"S3 region of the warehouse bucket"`
	S3AccessKeyID     string `key:"icebergS3AccessKeyId" help:"S3 access key id (empty: the AWS default chain)"`
	S3SecretAccessKey string `key:"icebergS3SecretAccessKey" help:"S3 secret access key"`
	// VendCredentials puts the S3 settings above, credentials included, into the REST
	// catalog's LoadTable answers, so that engines need no object-store configuration of
	// their own. Off by default: it hands the broker's credentials to every catalog client.
	VendCredentials bool `key:"icebergCatalogVendCredentials" help:"give REST catalog clients the warehouse's S3 endpoint and credentials in LoadTable answers"`

	CommitIntervalSeconds int   `key:"icebergCommitIntervalSeconds" help:"seconds between commits of a table's written rows (the table's freshness)"`
	TargetFileSizeBytes   int64 `key:"icebergTargetFileSizeBytes" help:"size compaction aims at for a table's data files"`
	// WriterBufferBytes bounds the rows one topic partition's writer holds in memory: when
	// full, they are written out as a data file (committed at the next commit).
	WriterBufferBytes int64 `key:"icebergWriterBufferBytes" help:"bytes of rows a partition's table writer holds in memory before it writes a data file"`
	MaxWriters        int   `key:"icebergMaxWriters" help:"topic partitions written into tables at once by this broker"`

	CompactionIntervalSeconds int `key:"icebergCompactionIntervalSeconds" help:"seconds between small-file compactions of a table (0: never)"`
	CompactionMinFiles        int `key:"icebergCompactionMinFiles" help:"small data files in one table partition that start a compaction"`
	// MaxHoldSeconds bounds how long the writer's position holds back the topic's
	// retention: past it, entries the writer has not committed may be trimmed like
	// acknowledged ones, and a writer that gets there finds a gap (counted in its stats).
	MaxHoldSeconds int64 `key:"icebergWriterMaxHoldSeconds" help:"longest a stuck table writer holds back the topic's retention, in seconds (-1: forever)"`
	// ScanIntervalSeconds is how often the broker looks for topics to write (policies
	// changed, topics created or loaded).
	ScanIntervalSeconds int `key:"icebergScanIntervalSeconds" help:"seconds between looks for topics whose policies enable a table"`
	// DeadLetterSuffix names the topic that records which cannot be converted go to:
	// <topic><suffix>, unless the policy names one.
	DeadLetterSuffix string `key:"icebergDeadLetterTopicSuffix" help:"suffix of the dead-letter topic of records a table writer cannot convert"`
}

// DefaultIcebergConfig returns the defaults: off; one commit a minute; 128 MiB files.
func DefaultIcebergConfig() IcebergConfig {
	return IcebergConfig{
		S3Region:                  "us-east-1",
		CommitIntervalSeconds:     60,
		TargetFileSizeBytes:       128 << 20,
		WriterBufferBytes:         16 << 20,
		MaxWriters:                256,
		CompactionIntervalSeconds: 600,
		CompactionMinFiles:        8,
		MaxHoldSeconds:            7 * 24 * 3600,
		ScanIntervalSeconds:       10,
		DeadLetterSuffix:          "-iceberg-DLQ",
	}
}

// Validate checks the keys; with icebergEnabled, a warehouse is required.
func (c *IcebergConfig) Validate() error {
	var errs []error
	if c.Enabled {
		switch {
		case c.Warehouse == "":
			errs = append(errs, &FieldError{Key: "icebergWarehouse", Value: `""`, Reason: "icebergEnabled needs it: s3://bucket/prefix or file:///dir"})
		case !strings.HasPrefix(c.Warehouse, "s3://") && !strings.HasPrefix(c.Warehouse, "file:///"):
			errs = append(errs, &FieldError{Key: "icebergWarehouse", Value: c.Warehouse, Reason: "want s3://bucket/prefix or file:///dir"})
		}
	}
	if (c.S3AccessKeyID == "") != (c.S3SecretAccessKey == "") {
		errs = append(errs, &FieldError{Key: "icebergS3AccessKeyId", Value: c.S3AccessKeyID, Reason: "icebergS3AccessKeyId and icebergS3SecretAccessKey go together"})
	}
	errs = append(errs,
		Between("icebergCommitIntervalSeconds", c.CommitIntervalSeconds, 1, 86400),
		Between("icebergTargetFileSizeBytes", c.TargetFileSizeBytes, int64(1<<20), int64(8<<30)),
		Between("icebergWriterBufferBytes", c.WriterBufferBytes, int64(64<<10), int64(4<<30)),
		Between("icebergMaxWriters", c.MaxWriters, 1, 100000),
		Between("icebergCompactionIntervalSeconds", c.CompactionIntervalSeconds, 0, 7*86400),
		Between("icebergCompactionMinFiles", c.CompactionMinFiles, 2, 10000),
		Between("icebergScanIntervalSeconds", c.ScanIntervalSeconds, 1, 3600),
		NotEmpty("icebergDeadLetterTopicSuffix", c.DeadLetterSuffix),
	)
	if c.MaxHoldSeconds != -1 && c.MaxHoldSeconds < 60 {
		errs = append(errs, &FieldError{Key: "icebergWriterMaxHoldSeconds", Value: c.MaxHoldSeconds, Reason: "must be at least 60, or -1"})
	}
	return errors.Join(errs...)
}
