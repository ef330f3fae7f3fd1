package offload

import (
	"errors"
	"fmt"
	"net/url"
	"strings"

	"github.com/magnetar-io/magnetar/internal/config"
	"github.com/magnetar-io/magnetar/internal/resources"
)

// Driver names (Pulsar's managedLedgerOffloadDriver values). "S3" and "aws-s3" are the same
// driver; "S3" is meant for S3-compatible stores, so it addresses buckets by path.
const (
	DriverS3         = "S3"
	DriverAWSS3      = "aws-s3"
	DriverGCS        = "google-cloud-storage"
	DriverAzure      = "azureblob"
	DriverFilesystem = "filesystem"
)

// Read priorities (managedLedgerOffloadedReadPriority).
const (
	ReadTieredStorageFirst = "tiered-storage-first"
	ReadBookkeeperFirst    = "bookkeeper-first"
)

// Defaults (Pulsar's OffloadPoliciesImpl).
const (
	DefaultMaxBlockSize   = 64 << 20
	DefaultReadBufferSize = 1 << 20
	DefaultMaxThreads     = 2
	DefaultReadThreads    = 2
	DefaultPrefetchRounds = 1
	// DefaultReadCacheSize bounds the chunk cache shared by every offloaded-ledger reader of
	// a process (our key managedLedgerOffloadReadCacheSizeInBytes).
	DefaultReadCacheSize = 64 << 20

	// minS3PartSize is the smallest part S3 accepts in a multipart upload (but the last).
	minS3PartSize = 5 << 20
)

// ErrConfig marks an invalid offload configuration or policy.
var ErrConfig = errors.New("offload: invalid configuration")

// Config is the resolved configuration of one driver: where objects go and how they are
// written and read. Policies.Config resolves it from Pulsar's keys.
type Config struct {
	Driver string
	// Bucket (container for azureblob) of the object-store drivers.
	Bucket string
	// Region of S3/GCS; S3 needs one of Region and ServiceEndpoint.
	Region string
	// ServiceEndpoint overrides the store's address (an S3-compatible server, Azurite,
	// a GCS emulator). For azureblob it is the account's blob service URL.
	ServiceEndpoint string
	// S3 credentials; empty means the AWS default chain (environment, profile, instance role).
	CredentialID     string
	CredentialSecret string
	// GCSServiceAccountKeyFile is a service-account JSON key; empty means the default
	// credentials of the environment.
	GCSServiceAccountKeyFile string
	// FileSystemURI is file:///dir or hdfs://namenode:port/dir for the filesystem driver.
	FileSystemURI string

	MaxBlockSize   int // bytes per block (one multipart part)
	ReadBufferSize int // bytes per chunk: seek-point spacing, range-read and cache unit
	MaxThreads     int // offloads running at once
	ReadThreads    int // object-store range reads running at once, for all readers
	PrefetchRounds int // chunks read ahead of a sequential reader
	ReadCacheSize  int64
}

// DefaultConfig returns the defaults with no driver.
func DefaultConfig() Config {
	return Config{
		MaxBlockSize:   DefaultMaxBlockSize,
		ReadBufferSize: DefaultReadBufferSize,
		MaxThreads:     DefaultMaxThreads,
		ReadThreads:    DefaultReadThreads,
		PrefetchRounds: DefaultPrefetchRounds,
		ReadCacheSize:  DefaultReadCacheSize,
	}
}

// Enabled reports whether a driver is configured.
func (c Config) Enabled() bool { return c.Driver != "" }

// Validate checks the configuration of the chosen driver.
func (c Config) Validate() error {
	var errs []error
	bad := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("%w: "+format, append([]any{ErrConfig}, args...)...))
	}
	switch c.Driver {
	case "":
		return nil
	case DriverS3, DriverAWSS3:
		if c.Bucket == "" {
			bad("driver %s needs s3ManagedLedgerOffloadBucket (or managedLedgerOffloadBucket)", c.Driver)
		}
		if c.Region == "" && c.ServiceEndpoint == "" {
			bad("driver %s needs s3ManagedLedgerOffloadRegion or s3ManagedLedgerOffloadServiceEndpoint", c.Driver)
		}
		if (c.CredentialID == "") != (c.CredentialSecret == "") {
			bad("s3ManagedLedgerOffloadCredentialId and s3ManagedLedgerOffloadCredentialSecret go together")
		}
		if c.MaxBlockSize < minS3PartSize {
			bad("managedLedgerOffloadMaxBlockSizeInBytes %d is below S3's 5 MiB part minimum", c.MaxBlockSize)
		}
	case DriverGCS:
		if c.Bucket == "" {
			bad("driver %s needs gcsManagedLedgerOffloadBucket (or managedLedgerOffloadBucket)", c.Driver)
		}
	case DriverAzure:
		if c.Bucket == "" {
			bad("driver %s needs managedLedgerOffloadBucket (the container)", c.Driver)
		}
	case DriverFilesystem:
		u, err := url.Parse(c.FileSystemURI)
		switch {
		case c.FileSystemURI == "":
			bad("driver filesystem needs fileSystemURI (file:///dir or hdfs://host:port/dir)")
		case err != nil:
			bad("fileSystemURI %q: %v", c.FileSystemURI, err)
		case u.Scheme == "file" && u.Path == "":
			bad("fileSystemURI %q has no directory", c.FileSystemURI)
		case u.Scheme == "hdfs" && u.Host == "":
			bad("fileSystemURI %q has no namenode address", c.FileSystemURI)
		case u.Scheme != "file" && u.Scheme != "hdfs":
			bad("fileSystemURI %q: scheme must be file or hdfs", c.FileSystemURI)
		}
	default:
		bad("unknown managedLedgerOffloadDriver %q (one of %s)", c.Driver, strings.Join(DriverNames(), ", "))
	}
	if c.MaxBlockSize < 1<<10 || c.MaxBlockSize > 1<<30 {
		bad("managedLedgerOffloadMaxBlockSizeInBytes %d outside 1 KiB..1 GiB", c.MaxBlockSize)
	}
	if c.ReadBufferSize < 1<<10 || c.ReadBufferSize > 1<<30 {
		bad("managedLedgerOffloadReadBufferSizeInBytes %d outside 1 KiB..1 GiB", c.ReadBufferSize)
	}
	if c.MaxThreads < 1 || c.MaxThreads > 256 {
		bad("managedLedgerOffloadMaxThreads %d outside 1..256", c.MaxThreads)
	}
	if c.ReadThreads < 1 || c.ReadThreads > 256 {
		bad("managedLedgerOffloadReadThreads %d outside 1..256", c.ReadThreads)
	}
	if c.PrefetchRounds < 0 || c.PrefetchRounds > 64 {
		bad("managedLedgerOffloadPrefetchRounds %d outside 0..64", c.PrefetchRounds)
	}
	if c.ReadCacheSize < 0 {
		bad("managedLedgerOffloadReadCacheSizeInBytes %d is negative", c.ReadCacheSize)
	}
	return errors.Join(errs...)
}

// DriverNames lists the supported drivers.
func DriverNames() []string {
	return []string{DriverS3, DriverAWSS3, DriverGCS, DriverAzure, DriverFilesystem}
}

// canonicalDriver maps a driver name case-insensitively onto ours ("s3" -> "S3").
func canonicalDriver(name string) string {
	for _, d := range DriverNames() {
		if strings.EqualFold(d, name) {
			return d
		}
	}
	return name
}

// DriverMetadata is what Offload records next to a ledger's uuid (doc.go, "Driver
// metadata"). Never credentials.
func (c Config) DriverMetadata() map[string]string {
	m := map[string]string{}
	put := func(k, v string) {
		if v != "" {
			m[k] = v
		}
	}
	if c.Driver == DriverFilesystem {
		put("fileSystemURI", c.FileSystemURI)
		return m
	}
	put("bucket", c.Bucket)
	put("region", c.Region)
	put("serviceEndpoint", c.ServiceEndpoint)
	return m
}

// WithDriverMetadata returns c pointed at the location recorded in md (driver name and
// metadata of an offloaded ledger), keeping c's credentials and tuning.
func (c Config) WithDriverMetadata(driver string, md map[string]string) Config {
	c.Driver = canonicalDriver(driver)
	if c.Driver == DriverFilesystem {
		if v := md["fileSystemURI"]; v != "" {
			c.FileSystemURI = v
		}
		return c
	}
	c.Bucket, c.Region, c.ServiceEndpoint = md["bucket"], md["region"], md["serviceEndpoint"]
	return c
}

// Policies is Pulsar's OffloadPolicies: the JSON of a namespace's or topic's offloadPolicies
// and the same keys in the broker configuration. Nil fields are unset and inherit (topic ->
// namespace -> broker). The record's shape is resources.OffloadPolicies (resources owns the
// policy records and sits below this package); this type adds resolving and validating.
type Policies resources.OffloadPolicies

// Merge returns p with every unset field taken from under (p wins). Only the thresholds
// and the deletion lag treat a set 0 as a value (0 = at once); every other field counts as
// unset when empty or 0, because admin clients send their whole struct (pulsaradmin's
// OffloadPolicies has no pointers): a threshold-only policy must not blank the broker's
// driver, bucket or thread counts.
func (p Policies) Merge(under Policies) Policies {
	out := under
	mergeSet(&out.Driver, p.Driver)
	mergeSet(&out.MaxThreads, p.MaxThreads)
	mergeSet(&out.ReadThreads, p.ReadThreads)
	mergeSet(&out.PrefetchRounds, p.PrefetchRounds)
	mergeField(&out.ThresholdInBytes, p.ThresholdInBytes)
	mergeField(&out.ThresholdInSeconds, p.ThresholdInSeconds)
	mergeField(&out.DeletionLagInMillis, p.DeletionLagInMillis)
	mergeSet(&out.ReadPriority, p.ReadPriority)
	mergeSet(&out.S3Region, p.S3Region)
	mergeSet(&out.S3Bucket, p.S3Bucket)
	mergeSet(&out.S3ServiceEndpoint, p.S3ServiceEndpoint)
	mergeSet(&out.S3MaxBlockSize, p.S3MaxBlockSize)
	mergeSet(&out.S3ReadBufferSize, p.S3ReadBufferSize)
	mergeSet(&out.S3CredentialID, p.S3CredentialID)
	mergeSet(&out.S3CredentialSecret, p.S3CredentialSecret)
	mergeSet(&out.S3Role, p.S3Role)
	mergeSet(&out.S3RoleSessionName, p.S3RoleSessionName)
	mergeSet(&out.GCSRegion, p.GCSRegion)
	mergeSet(&out.GCSBucket, p.GCSBucket)
	mergeSet(&out.GCSMaxBlockSize, p.GCSMaxBlockSize)
	mergeSet(&out.GCSReadBufferSize, p.GCSReadBufferSize)
	mergeSet(&out.GCSServiceAccountKeyFile, p.GCSServiceAccountKeyFile)
	mergeSet(&out.FileSystemProfilePath, p.FileSystemProfilePath)
	mergeSet(&out.FileSystemURI, p.FileSystemURI)
	mergeSet(&out.Bucket, p.Bucket)
	mergeSet(&out.Region, p.Region)
	mergeSet(&out.ServiceEndpoint, p.ServiceEndpoint)
	mergeSet(&out.MaxBlockSize, p.MaxBlockSize)
	mergeSet(&out.ReadBufferSize, p.ReadBufferSize)
	mergeSet(&out.ReadCacheSize, p.ReadCacheSize)
	return out
}

// mergeSet is mergeField for fields whose zero value means unset.
func mergeSet[T comparable](dst **T, v *T) {
	var zero T
	if v != nil && *v != zero {
		*dst = v
	}
}

func mergeField[T any](dst **T, v *T) {
	if v != nil {
		*dst = v
	}
}

// first returns the first set, non-empty value.
func first[T comparable](vs ...*T) (T, bool) {
	var zero T
	for _, v := range vs {
		if v != nil && *v != zero {
			return *v, true
		}
	}
	return zero, false
}

// Config resolves the driver configuration: the generic managedLedgerOffload* keys win over
// the driver-specific ones, as in Pulsar.
func (p Policies) Config() Config {
	c := DefaultConfig()
	if d, ok := first(p.Driver); ok {
		c.Driver = canonicalDriver(d)
	}
	var bucket, region []*string
	var block, buf []*int
	switch c.Driver {
	case DriverS3, DriverAWSS3:
		bucket, region = []*string{p.Bucket, p.S3Bucket}, []*string{p.Region, p.S3Region}
		block, buf = []*int{p.MaxBlockSize, p.S3MaxBlockSize}, []*int{p.ReadBufferSize, p.S3ReadBufferSize}
		c.ServiceEndpoint, _ = first(p.ServiceEndpoint, p.S3ServiceEndpoint)
		c.CredentialID, _ = first(p.S3CredentialID)
		c.CredentialSecret, _ = first(p.S3CredentialSecret)
	case DriverGCS:
		bucket, region = []*string{p.Bucket, p.GCSBucket}, []*string{p.Region, p.GCSRegion}
		block, buf = []*int{p.MaxBlockSize, p.GCSMaxBlockSize}, []*int{p.ReadBufferSize, p.GCSReadBufferSize}
		c.ServiceEndpoint, _ = first(p.ServiceEndpoint)
		c.GCSServiceAccountKeyFile, _ = first(p.GCSServiceAccountKeyFile)
	default:
		bucket, region = []*string{p.Bucket}, []*string{p.Region}
		block, buf = []*int{p.MaxBlockSize}, []*int{p.ReadBufferSize}
		c.ServiceEndpoint, _ = first(p.ServiceEndpoint)
	}
	c.Bucket, _ = first(bucket...)
	c.Region, _ = first(region...)
	if v, ok := first(block...); ok {
		c.MaxBlockSize = v
	}
	if v, ok := first(buf...); ok {
		c.ReadBufferSize = v
	}
	c.FileSystemURI, _ = first(p.FileSystemURI)
	// 0 is unset for these (see Merge); a prefetch of 0 rounds is a value.
	if v, ok := first(p.MaxThreads); ok {
		c.MaxThreads = v
	}
	if v, ok := first(p.ReadThreads); ok {
		c.ReadThreads = v
	}
	if p.PrefetchRounds != nil {
		c.PrefetchRounds = *p.PrefetchRounds
	}
	if v, ok := first(p.ReadCacheSize); ok {
		c.ReadCacheSize = v
	}
	return c
}

// Trigger is when a managed ledger offloads on its own: the policy part of Policies.
type Trigger struct {
	// ThresholdBytes: offload the oldest closed ledgers while the log keeps more than this
	// on the bookies; 0 = every closed ledger as soon as possible; -1 = never.
	ThresholdBytes int64
	// ThresholdSeconds: offload closed ledgers older than this; 0 = at once; -1 = never.
	ThresholdSeconds int64
	// DeletionLagMillis: bookie copies are deleted this long after the offload completed;
	// -1 = never.
	DeletionLagMillis int64
	// ReadPriority is ReadTieredStorageFirst or ReadBookkeeperFirst.
	ReadPriority string
}

// Trigger resolves the policy part, with Pulsar's defaults (never, 4 h lag,
// tiered-storage-first).
func (p Policies) Trigger() Trigger {
	t := Trigger{ThresholdBytes: -1, ThresholdSeconds: -1, DeletionLagMillis: 4 * 3600 * 1000, ReadPriority: ReadTieredStorageFirst}
	if p.ThresholdInBytes != nil {
		t.ThresholdBytes = *p.ThresholdInBytes
	}
	if p.ThresholdInSeconds != nil {
		t.ThresholdSeconds = *p.ThresholdInSeconds
	}
	if p.DeletionLagInMillis != nil {
		t.DeletionLagMillis = *p.DeletionLagInMillis
	}
	if p.ReadPriority != nil && *p.ReadPriority != "" {
		t.ReadPriority = *p.ReadPriority
	}
	return t
}

// Validate checks a policy as an admin would send it: known driver and read priority,
// thresholds of -1 or more, and a resolvable driver configuration when a driver is named.
func (p Policies) Validate() error {
	var errs []error
	if p.ReadPriority != nil && *p.ReadPriority != "" && *p.ReadPriority != ReadTieredStorageFirst && *p.ReadPriority != ReadBookkeeperFirst {
		errs = append(errs, fmt.Errorf("%w: managedLedgerOffloadedReadPriority %q (tiered-storage-first or bookkeeper-first)", ErrConfig, *p.ReadPriority))
	}
	for name, v := range map[string]*int64{
		"managedLedgerOffloadThresholdInBytes":    p.ThresholdInBytes,
		"managedLedgerOffloadThresholdInSeconds":  p.ThresholdInSeconds,
		"managedLedgerOffloadDeletionLagInMillis": p.DeletionLagInMillis,
	} {
		if v != nil && *v < -1 {
			errs = append(errs, fmt.Errorf("%w: %s %d (-1 disables)", ErrConfig, name, *v))
		}
	}
	if _, ok := first(p.Driver); ok {
		if err := p.Config().Validate(); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// PoliciesFromConfig reads the broker's keys as a policy (the bottom of topic -> namespace
// -> broker); empty and 0 values stay unset.
func PoliciesFromConfig(c config.OffloadConfig) Policies {
	str := func(s string) *string {
		if s == "" {
			return nil
		}
		return &s
	}
	num := func(n int) *int {
		if n == 0 {
			return nil
		}
		return &n
	}
	p := Policies{
		Driver: str(c.Driver), MaxThreads: num(c.MaxThreads), ReadThreads: num(c.ReadThreads),
		PrefetchRounds: &c.PrefetchRounds, ThresholdInBytes: &c.ThresholdBytes, ThresholdInSeconds: &c.ThresholdSeconds,
		DeletionLagInMillis: &c.DeletionLagMs, ReadPriority: str(c.ReadPriority),
		Bucket: str(c.Bucket), Region: str(c.Region), ServiceEndpoint: str(c.ServiceEndpoint),
		MaxBlockSize: num(c.MaxBlockSize), ReadBufferSize: num(c.ReadBufferSize),
		S3Bucket: str(c.S3Bucket), S3Region: str(c.S3Region), S3ServiceEndpoint: str(c.S3ServiceEndpoint),
		S3MaxBlockSize: num(c.S3MaxBlockSize), S3ReadBufferSize: num(c.S3ReadBufferSize),
		S3CredentialID: str(c.S3CredentialID), S3CredentialSecret: str(c.S3CredentialSecret),
		GCSBucket: str(c.GCSBucket), GCSRegion: str(c.GCSRegion), GCSMaxBlockSize: num(c.GCSMaxBlockSize),
		GCSReadBufferSize: num(c.GCSReadBufferSize), GCSServiceAccountKeyFile: str(c.GCSServiceAccountKeyFile),
		FileSystemURI: str(c.FileSystemURI), FileSystemProfilePath: str(c.FileSystemProfilePath),
	}
	if c.ReadCacheSize > 0 {
		p.ReadCacheSize = &c.ReadCacheSize
	}
	return p
}
