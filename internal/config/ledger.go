package config

import (
	"errors"
	"time"
)

// Ledger placement policies (ensemblePlacementPolicy).
const (
	// PlacementRackAware spreads every write set over distinct racks when bookies declare
	// racks, and falls back to random choice when they do not.
	PlacementRackAware = "rackaware"
	// PlacementRandom ignores racks.
	PlacementRandom = "random"
)

// LedgerClientConfig configures the ledger (BookKeeper) client that brokers and the auditor
// use. Key names follow BookKeeper's client configuration where one exists; durations carry
// their unit in the type (write "5s", "50ms"). Nothing here reloads at run time.
type LedgerClientConfig struct {
	// AddEntryTimeout bounds one add request to one bookie; a bookie that does not answer in
	// time is replaced by an ensemble change (BookKeeper addEntryTimeoutSec, default 5s).
	AddEntryTimeout time.Duration `key:"addEntryTimeout" help:"timeout of one add request to one bookie before the bookie is replaced"`
	// ReadEntryTimeout bounds one read request to one bookie (BookKeeper readEntryTimeoutSec).
	ReadEntryTimeout time.Duration `key:"readEntryTimeout" help:"timeout of one read request to one bookie"`
	// SpeculativeReadTimeout is how long a read waits for one replica before also asking the
	// next replica of the write set (0 disables speculative reads). Default 50ms.
	SpeculativeReadTimeout time.Duration `key:"speculativeReadTimeout" help:"wait before a read also asks the next replica; 0 disables"`
	// MaxAddsInProgress bounds the adds a writer has in flight (sent, not yet acknowledged);
	// AppendAsync blocks beyond it (BookKeeper maxAddsInProgressLimit).
	MaxAddsInProgress int `key:"maxAddsInProgressLimit" help:"adds in flight per ledger writer before AppendAsync blocks"`
	// MaxReadsInProgress bounds the entry reads one Read call has in flight
	// (BookKeeper maxReadsInProgressLimit).
	MaxReadsInProgress int `key:"maxReadsInProgressLimit" help:"entry reads in flight per Read call"`
	// ReadBatchMaxBytes bounds the payload of one batched range read from one bookie.
	ReadBatchMaxBytes int `key:"readBatchMaxBytes" help:"payload bytes of one batched range read"`
	// EnsemblePlacementPolicy is rackaware or random.
	EnsemblePlacementPolicy string `key:"ensemblePlacementPolicy" help:"bookie placement: rackaware or random"`
	// LACLongPollTimeout is how long one long-poll LAC request waits at a bookie before
	// returning the unchanged LAC and being re-sent.
	LACLongPollTimeout time.Duration `key:"lacLongPollTimeout" help:"wait of one long-poll LAC request at a bookie"`
	// LostBookieRecoveryDelay is how long a bookie's registration must be gone before the
	// auditor re-replicates its fragments (BookKeeper lostBookieRecoveryDelay, here 30s).
	LostBookieRecoveryDelay time.Duration `key:"lostBookieRecoveryDelay" help:"grace before the auditor re-replicates a vanished bookie's fragments"`
	// AuditorPeriodicCheckInterval is how often the elected auditor scans ledger metadata.
	AuditorPeriodicCheckInterval time.Duration `key:"auditorPeriodicCheckInterval" help:"how often the auditor scans ledgers for lost bookies"`
	// AuditorSessionTimeout is the metadata session ttl of the auditor's election: another
	// auditor takes over this long after the elected one stops.
	AuditorSessionTimeout time.Duration `key:"auditorSessionTimeout" help:"metadata session ttl of the auditor election"`
	// TLS is how the client reaches bookies over TLS with a client certificate (Pulsar's
	// bookkeeperTLS* keys, security.go).
	TLS BookieClientTLSConfig
}

// DefaultLedgerClientConfig returns the ledger client defaults.
func DefaultLedgerClientConfig() LedgerClientConfig {
	return LedgerClientConfig{
		AddEntryTimeout:              5 * time.Second,
		ReadEntryTimeout:             5 * time.Second,
		SpeculativeReadTimeout:       50 * time.Millisecond,
		MaxAddsInProgress:            10000,
		MaxReadsInProgress:           64,
		ReadBatchMaxBytes:            4 << 20,
		EnsemblePlacementPolicy:      PlacementRackAware,
		LACLongPollTimeout:           10 * time.Second,
		LostBookieRecoveryDelay:      30 * time.Second,
		AuditorPeriodicCheckInterval: 10 * time.Second,
		AuditorSessionTimeout:        10 * time.Second,
	}
}

// Validate checks the ledger client settings.
func (c *LedgerClientConfig) Validate() error {
	return errors.Join(
		Between("addEntryTimeout", c.AddEntryTimeout, time.Millisecond, time.Hour),
		Between("readEntryTimeout", c.ReadEntryTimeout, time.Millisecond, time.Hour),
		Between("speculativeReadTimeout", c.SpeculativeReadTimeout, 0, time.Minute),
		Between("maxAddsInProgressLimit", c.MaxAddsInProgress, 1, 1_000_000),
		Between("maxReadsInProgressLimit", c.MaxReadsInProgress, 1, 100_000),
		Between("readBatchMaxBytes", c.ReadBatchMaxBytes, 1024, 1<<30),
		OneOf("ensemblePlacementPolicy", c.EnsemblePlacementPolicy, PlacementRackAware, PlacementRandom),
		Between("lacLongPollTimeout", c.LACLongPollTimeout, time.Millisecond, time.Hour),
		Between("lostBookieRecoveryDelay", c.LostBookieRecoveryDelay, 0, 7*24*time.Hour),
		Between("auditorPeriodicCheckInterval", c.AuditorPeriodicCheckInterval, time.Millisecond, 24*time.Hour),
		Between("auditorSessionTimeout", c.AuditorSessionTimeout, 100*time.Millisecond, time.Hour),
		c.TLS.Validate(),
	)
}
