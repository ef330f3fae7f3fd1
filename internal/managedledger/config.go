package managedledger

import (
	"errors"
	"fmt"
	"time"

	"github.com/magnetar-io/magnetar/internal/config"
	"github.com/magnetar-io/magnetar/internal/ledger"
	"github.com/magnetar-io/magnetar/internal/offload"
)

// Errors of the managed ledger. Errors from the ledger client and the metadata store are
// wrapped, so errors.Is(err, ledger.ErrFenced) also works where it applies.
var (
	ErrFenced               = errors.New("managedledger: fenced by a newer owner")
	ErrClosed               = errors.New("managedledger: closed")
	ErrTerminated           = errors.New("managedledger: terminated, no more writes")
	ErrNoMoreEntries        = errors.New("managedledger: terminated and every entry was read")
	ErrTooBusy              = errors.New("managedledger: too many adds in flight")
	ErrInvalidPosition      = errors.New("managedledger: invalid position")
	ErrCursorNotFound       = errors.New("managedledger: no such cursor")
	ErrCursorAlreadyExists  = errors.New("managedledger: cursor already exists")
	ErrBadConfig            = errors.New("managedledger: bad config")
	ErrNotFound             = errors.New("managedledger: no such managed ledger")
	ErrBacklogQuotaExceeded = errors.New("managedledger: backlog quota exceeded")
	ErrCorruptMetadata      = errors.New("managedledger: corrupt metadata")
	ErrLedgerUnavailable    = errors.New("managedledger: no writable ledger")
)

// Config is the per-topic configuration given to Factory.Open. Start from
// Factory.DefaultConfig (the broker defaults) and override what namespace or topic policies
// set.
type Config struct {
	// EnsembleSize, WriteQuorum and AckQuorum of new ledgers (E >= Qw >= Qa >= 1).
	EnsembleSize, WriteQuorum, AckQuorum int
	Digest                               ledger.DigestType
	Password                             []byte

	// Rollover triggers; see config.ManagedLedgerConfig.
	MaxEntriesPerLedger   int64
	MaxSizePerLedgerBytes int64
	MinLedgerRolloverTime time.Duration
	MaxLedgerRolloverTime time.Duration
	// MaxPendingAddEntries bounds adds in flight; beyond it AddEntry fails with ErrTooBusy.
	MaxPendingAddEntries int

	// Offload is when closed ledgers move to tiered storage and how reads choose between
	// the copies (namespace/topic offloadPolicies over the broker's keys); Offloader is
	// where they go (nil: the factory's).
	Offload   offload.Trigger
	Offloader offload.Offloader
	// OffloadPolicies are the topic's offloadPolicies over its namespace's. With a factory
	// OffloadPool, their driver settings over the factory's OffloadPolicies choose where new
	// offloads go (ml_offload.go:acquireOffloader); ledgers already offloaded are read and
	// deleted where they were written. Ignored when Offloader is set.
	OffloadPolicies offload.Policies

	// RetentionTime and RetentionSizeBytes keep consumed ledgers: a ledger entirely before
	// the slowest durable cursor is deleted once it is older than RetentionTime or once the
	// log without it is still larger than RetentionSizeBytes. 0 means "not set" for either
	// (both 0: delete as soon as consumed); -1 means infinite for that dimension.
	RetentionTime      time.Duration
	RetentionSizeBytes int64

	// Cursor persistence.
	MarkDeleteRateLimit       float64 // cursor-state writes per second per cursor
	MaxUnackedRangesToPersist int
	CursorMaxEntriesPerLedger int64
	CursorRolloverTime        time.Duration
	CursorSnapshotInterval    time.Duration

	// ReadAheadEntries extra entries fetched by a catch-up read and kept in the cache.
	ReadAheadEntries int
	// MaxReadBatchSize caps the entries one read returns.
	MaxReadBatchSize int
	// CursorBackloggedThreshold is how many entries behind the end of the log a cursor's
	// read position may be before the cursor stops counting as active for the entry cache
	// (cursor_active.go); 0 never deactivates a cursor for its backlog.
	CursorBackloggedThreshold int64
	// MaxReadSizeBytes bounds one cursor read and one catch-up ledger read (with its
	// read-ahead) by estimated bytes; 0: no bound (ml_read_size.go).
	MaxReadSizeBytes int64
}

// ConfigFrom builds the per-topic Config from the broker defaults.
func ConfigFrom(c config.ManagedLedgerConfig) Config {
	d := ledger.DigestCRC32C
	if c.DigestType == "DUMMY" {
		d = ledger.DigestDummy
	}
	return Config{
		EnsembleSize:              c.EnsembleSize,
		WriteQuorum:               c.WriteQuorum,
		AckQuorum:                 c.AckQuorum,
		Digest:                    d,
		Password:                  []byte(c.Password),
		MaxEntriesPerLedger:       c.MaxEntriesPerLedger,
		MaxSizePerLedgerBytes:     c.MaxSizePerLedgerMbytes << 20,
		MinLedgerRolloverTime:     c.MinLedgerRolloverTime(),
		MaxLedgerRolloverTime:     c.MaxLedgerRolloverTime(),
		MaxPendingAddEntries:      c.MaxPendingAddEntries,
		MarkDeleteRateLimit:       c.MarkDeleteRateLimit,
		MaxUnackedRangesToPersist: c.MaxUnackedRangesToPersist,
		CursorMaxEntriesPerLedger: c.CursorMaxEntriesPerLedger,
		CursorRolloverTime:        time.Duration(c.CursorRolloverTimeInSeconds) * time.Second,
		CursorSnapshotInterval:    time.Duration(c.CursorSnapshotIntervalSeconds) * time.Second,
		ReadAheadEntries:          c.ReadAheadEntries,
		MaxReadBatchSize:          c.MaxReadBatchSize,
		CursorBackloggedThreshold: c.CursorBackloggedThreshold,
		MaxReadSizeBytes:          c.MaxReadSizeBytes,
		Offload:                   offload.Policies{}.Trigger(),
	}
}

// Validate checks the per-topic settings.
func (c *Config) Validate() error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: "+format, append([]any{ErrBadConfig}, args...)...)
	}
	switch {
	case c.AckQuorum < 1 || c.WriteQuorum < c.AckQuorum || c.EnsembleSize < c.WriteQuorum:
		return bad("need ensemble %d >= write quorum %d >= ack quorum %d >= 1", c.EnsembleSize, c.WriteQuorum, c.AckQuorum)
	case c.MaxEntriesPerLedger < 1 || c.MaxSizePerLedgerBytes < 1:
		return bad("max entries and size per ledger must be positive")
	case c.MinLedgerRolloverTime < 0 || c.MaxLedgerRolloverTime < c.MinLedgerRolloverTime:
		return bad("need 0 <= min rollover time %v <= max rollover time %v", c.MinLedgerRolloverTime, c.MaxLedgerRolloverTime)
	case c.MaxPendingAddEntries < 1:
		return bad("max pending adds must be positive")
	case c.RetentionTime < -1 || c.RetentionSizeBytes < -1:
		return bad("retention must be -1 (infinite), 0 (unset) or positive")
	case c.MarkDeleteRateLimit <= 0:
		return bad("mark-delete rate limit must be positive")
	case c.MaxUnackedRangesToPersist < 1 || c.CursorMaxEntriesPerLedger < 1:
		return bad("cursor limits must be positive")
	case c.CursorRolloverTime <= 0 || c.CursorSnapshotInterval <= 0:
		return bad("cursor rollover time and snapshot interval must be positive")
	case c.ReadAheadEntries < 0 || c.MaxReadBatchSize < 1:
		return bad("read-ahead must be >= 0 and max read batch >= 1")
	case c.CursorBackloggedThreshold < 0:
		return bad("cursor backlogged threshold %d must be >= 0", c.CursorBackloggedThreshold)
	case c.MaxReadSizeBytes < 0:
		return bad("max read size %d must be >= 0", c.MaxReadSizeBytes)
	case c.Offload.ReadPriority != offload.ReadTieredStorageFirst && c.Offload.ReadPriority != offload.ReadBookkeeperFirst:
		return bad("offloaded read priority %q", c.Offload.ReadPriority)
	case c.Offload.ThresholdBytes < -1 || c.Offload.ThresholdSeconds < -1 || c.Offload.DeletionLagMillis < -1:
		return bad("offload thresholds and deletion lag must be >= -1")
	}
	return nil
}

// BacklogQuotaPolicy is what happens when a backlog quota is exceeded (Pulsar's names).
type BacklogQuotaPolicy string

// Backlog quota policies.
const (
	// ProducerRequestHold: the broker holds new producers (and their sends) until the
	// backlog shrinks.
	ProducerRequestHold BacklogQuotaPolicy = "producer_request_hold"
	// ProducerException: the broker fails producers with a quota-exceeded error.
	ProducerException BacklogQuotaPolicy = "producer_exception"
	// ConsumerBacklogEviction: the slowest cursors are moved forward, dropping their oldest
	// backlog, until the quota holds.
	ConsumerBacklogEviction BacklogQuotaPolicy = "consumer_backlog_eviction"
)

// BacklogQuota limits the backlog of the slowest durable cursor by size and by age. A limit
// <= 0 is not enforced.
type BacklogQuota struct {
	LimitBytes int64
	LimitTime  time.Duration
	Policy     BacklogQuotaPolicy
}
