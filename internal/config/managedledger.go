package config

import (
	"errors"
	"time"
)

// ManagedLedgerConfig holds the broker-wide defaults of the managed ledger (a topic's log):
// replication of new ledgers, ledger rollover, the entry cache shared by all topics of a
// broker, and cursor persistence. Namespace policies override the replication settings per
// topic when the broker opens a managed ledger. Key names are Pulsar's broker.conf keys where
// one exists. None of these reload at runtime.
type ManagedLedgerConfig struct {
	// EnsembleSize, WriteQuorum and AckQuorum are E/Qw/Qa of new ledgers: E bookies hold a
	// ledger, Qw copies of each entry, Qa acknowledgements confirm an add. E >= Qw >= Qa >= 1.
	EnsembleSize int `key:"managedLedgerDefaultEnsembleSize" help:"bookies that hold each new ledger (E)"`
	WriteQuorum  int `key:"managedLedgerDefaultWriteQuorum" help:"copies of each entry (Qw)"`
	AckQuorum    int `key:"managedLedgerDefaultAckQuorum" help:"bookie acknowledgements that confirm an add (Qa)"`
	// DigestType is the entry checksum of new ledgers: CRC32C or DUMMY.
	DigestType string `key:"managedLedgerDigestType" help:"entry checksum of new ledgers: CRC32C or DUMMY"`
	// Password is the ledger password of new ledgers (BookKeeper's access check, not security).
	Password string `key:"managedLedgerPassword" help:"ledger password of new ledgers"`

	// Rollover: a ledger is closed and a new one started once it holds MaxEntriesPerLedger
	// entries or MaxSizePerLedgerMbytes, but not before MinLedgerRolloverTimeMinutes; and
	// always once it is MaxLedgerRolloverTimeMinutes old (if it has entries).
	MaxEntriesPerLedger              int64   `key:"managedLedgerMaxEntriesPerLedger" help:"entries after which a ledger is rolled over"`
	MaxSizePerLedgerMbytes           int64   `key:"managedLedgerMaxSizePerLedgerMbytes" help:"size in MiB after which a ledger is rolled over"`
	MinLedgerRolloverTimeMinutes     int64   `key:"managedLedgerMinLedgerRolloverTimeMinutes" help:"minimum age in minutes before a ledger is rolled over by size or entries"`
	MaxLedgerRolloverTimeMinutes     int64   `key:"managedLedgerMaxLedgerRolloverTimeMinutes" help:"age in minutes after which a ledger is rolled over regardless of size"`
	MaxPendingAddEntries             int     `key:"managedLedgerMaxPendingAddEntries" help:"adds in flight per managed ledger before AddEntry fails with too-busy"`
	CursorMaxEntriesPerLedger        int64   `key:"managedLedgerCursorMaxEntriesPerLedger" help:"cursor-state entries after which a cursor ledger is rolled over"`
	CursorRolloverTimeInSeconds      int64   `key:"managedLedgerCursorRolloverTimeInSeconds" help:"age in seconds after which a cursor ledger is rolled over"`
	MaxUnackedRangesToPersist        int     `key:"managedLedgerMaxUnackedRangesToPersist" help:"individually acknowledged ranges persisted per cursor; beyond it acks may be redelivered after a restart"`
	MarkDeleteRateLimit              float64 `key:"managedLedgerDefaultMarkDeleteRateLimit" help:"cursor-state writes per second per cursor (acks in between are batched)"`
	CursorSnapshotIntervalSeconds    int64   `key:"managedLedgerCursorSnapshotIntervalSeconds" help:"seconds between cursor snapshots in the metadata store (besides cursor-ledger switches)"`
	CacheSizeMB                      int64   `key:"managedLedgerCacheSizeMB" help:"entry cache shared by all topics of a broker, in MiB (0 disables)"`
	CacheEvictionWatermark           float64 `key:"managedLedgerCacheEvictionWatermark" help:"fraction of the cache size eviction frees down to"`
	CacheEvictionTimeThresholdMillis int64   `key:"managedLedgerCacheEvictionTimeThresholdMillis" help:"cached entries older than this are evicted"`
	CacheEvictionFrequency           float64 `key:"managedLedgerCacheEvictionFrequency" help:"cache eviction passes per second"`
	ReadAheadEntries                 int     `key:"managedLedgerReadAheadEntries" help:"entries read from bookies per catch-up read beyond what was asked, kept in the cache"`
	MaxReadBatchSize                 int     `key:"dispatcherMaxReadBatchSize" help:"largest number of entries one cursor read returns"`
	RetentionCheckIntervalInSeconds  int64   `key:"retentionCheckIntervalInSeconds" help:"seconds between retention, rollover-age and cache-age checks"`
	// CursorBackloggedThreshold: a cursor whose read position is more than this many entries
	// behind the end of its log is inactive for the entry cache (adds are not cached for it
	// and it does not hold read-position eviction back) until it catches up. 0 disables it.
	CursorBackloggedThreshold int64 `key:"managedLedgerCursorBackloggedThreshold" help:"entries behind the end after which a cursor stops keeping entries in the cache (0: never)"`
	// MaxReadSizeBytes bounds the bytes of one cursor read and of one catch-up read from the
	// bookies (the entries asked for plus read-ahead), estimated from the ledger's average
	// entry size. Large batched entries otherwise make a 100-entry read tens of MiB, all
	// live at once. A read returns at least one entry. 0: no byte bound.
	MaxReadSizeBytes int64 `key:"dispatcherMaxReadSizeBytes" help:"bytes one cursor read (and one catch-up read with its read-ahead) fetches at most, estimated (0: no bound)"`
}

// DefaultManagedLedgerConfig returns Pulsar's broker.conf defaults.
func DefaultManagedLedgerConfig() ManagedLedgerConfig {
	return ManagedLedgerConfig{
		EnsembleSize:                     2,
		WriteQuorum:                      2,
		AckQuorum:                        2,
		DigestType:                       "CRC32C",
		MaxEntriesPerLedger:              50000,
		MaxSizePerLedgerMbytes:           2048,
		MinLedgerRolloverTimeMinutes:     10,
		MaxLedgerRolloverTimeMinutes:     240,
		MaxPendingAddEntries:             50000,
		CursorMaxEntriesPerLedger:        50000,
		CursorRolloverTimeInSeconds:      4 * 3600,
		MaxUnackedRangesToPersist:        10000,
		MarkDeleteRateLimit:              1.0,
		CursorSnapshotIntervalSeconds:    60,
		CacheSizeMB:                      256,
		CacheEvictionWatermark:           0.9,
		CacheEvictionTimeThresholdMillis: 1000,
		CacheEvictionFrequency:           100,
		ReadAheadEntries:                 100,
		MaxReadBatchSize:                 100,
		RetentionCheckIntervalInSeconds:  120,
		CursorBackloggedThreshold:        1000,
		MaxReadSizeBytes:                 5 << 20,
	}
}

// MaxLedgerRolloverTime and friends convert the minute/second keys to durations.
func (c *ManagedLedgerConfig) MaxLedgerRolloverTime() time.Duration {
	return time.Duration(c.MaxLedgerRolloverTimeMinutes) * time.Minute
}

// MinLedgerRolloverTime is MinLedgerRolloverTimeMinutes as a duration.
func (c *ManagedLedgerConfig) MinLedgerRolloverTime() time.Duration {
	return time.Duration(c.MinLedgerRolloverTimeMinutes) * time.Minute
}

// Validate checks the managed-ledger settings.
func (c *ManagedLedgerConfig) Validate() error {
	return errors.Join(
		Between("managedLedgerDefaultEnsembleSize", c.EnsembleSize, 1, 64),
		Between("managedLedgerDefaultWriteQuorum", c.WriteQuorum, 1, c.EnsembleSize),
		Between("managedLedgerDefaultAckQuorum", c.AckQuorum, 1, c.WriteQuorum),
		OneOf("managedLedgerDigestType", c.DigestType, "CRC32C", "DUMMY"),
		AtLeast("managedLedgerMaxEntriesPerLedger", c.MaxEntriesPerLedger, 1),
		AtLeast("managedLedgerMaxSizePerLedgerMbytes", c.MaxSizePerLedgerMbytes, 1),
		AtLeast("managedLedgerMinLedgerRolloverTimeMinutes", c.MinLedgerRolloverTimeMinutes, 0),
		AtLeast("managedLedgerMaxLedgerRolloverTimeMinutes", c.MaxLedgerRolloverTimeMinutes, c.MinLedgerRolloverTimeMinutes),
		Between("managedLedgerMaxPendingAddEntries", c.MaxPendingAddEntries, 1, 10_000_000),
		AtLeast("managedLedgerCursorMaxEntriesPerLedger", c.CursorMaxEntriesPerLedger, 1),
		AtLeast("managedLedgerCursorRolloverTimeInSeconds", c.CursorRolloverTimeInSeconds, 1),
		Between("managedLedgerMaxUnackedRangesToPersist", c.MaxUnackedRangesToPersist, 1, 10_000_000),
		Between("managedLedgerDefaultMarkDeleteRateLimit", c.MarkDeleteRateLimit, 0.001, 1e6),
		AtLeast("managedLedgerCursorSnapshotIntervalSeconds", c.CursorSnapshotIntervalSeconds, 1),
		Between("managedLedgerCacheSizeMB", c.CacheSizeMB, 0, 1<<30),
		Between("managedLedgerCacheEvictionWatermark", c.CacheEvictionWatermark, 0.1, 1.0),
		AtLeast("managedLedgerCacheEvictionTimeThresholdMillis", c.CacheEvictionTimeThresholdMillis, 1),
		Between("managedLedgerCacheEvictionFrequency", c.CacheEvictionFrequency, 0.01, 1000),
		Between("managedLedgerReadAheadEntries", c.ReadAheadEntries, 0, 100_000),
		Between("dispatcherMaxReadBatchSize", c.MaxReadBatchSize, 1, 100_000),
		AtLeast("retentionCheckIntervalInSeconds", c.RetentionCheckIntervalInSeconds, 1),
		AtLeast("managedLedgerCursorBackloggedThreshold", c.CursorBackloggedThreshold, 0),
		Between("dispatcherMaxReadSizeBytes", c.MaxReadSizeBytes, 0, 1<<30),
	)
}
