package config

import "errors"

// TransactionConfig is Pulsar transactions (internal/txn): the coordinators, the
// transaction buffer of each topic and the pending acknowledgements of subscriptions. Keys
// are Pulsar's broker.conf keys except numTransactionCoordinators (Pulsar sets the count
// once, with pulsar initialize-transaction-coordinator-metadata) and
// maxTransactionTimeoutMillis (Pulsar has no upper bound).
type TransactionConfig struct {
	// CoordinatorEnabled serves TC_CLIENT_CONNECT, NEW_TXN, ... and transactional sends and
	// acknowledgements. Off, they are refused with NotAllowedError "Transactions are not
	// enabled." (what the Go client's TestTransactionDisabled expects).
	CoordinatorEnabled bool `key:"transactionCoordinatorEnabled" help:"serve Pulsar transactions"`
	// NumCoordinators is the partition count of persistent://pulsar/system/
	// transaction_coordinator_assign, written once when the topic does not exist yet; each
	// partition is one coordinator, served by the broker owning that partition.
	NumCoordinators int `key:"numTransactionCoordinators" help:"transaction coordinators (partitions of the assign topic), set when it is first created"`
	// MaxActivePerCoordinator bounds the open transactions of one coordinator (their
	// metadata is in memory); NEW_TXN beyond it is refused. 0: no limit (Pulsar's default;
	// ours is finite so that memory is bounded).
	MaxActivePerCoordinator int64 `key:"maxActiveTransactionsPerCoordinator" help:"open transactions per coordinator before NEW_TXN is refused (0: no limit)"`
	// MaxTimeoutMillis bounds the timeout a client may ask for: an open transaction holds
	// back every consumer of the topics it wrote to, so it must end (abort) at some point.
	MaxTimeoutMillis int64 `key:"maxTransactionTimeoutMillis" help:"largest transaction timeout a client may ask for, in ms"`

	// Transaction buffer snapshots: taken after this many transactions ended on a topic
	// since the last one, or after this long if any did; they bound what a topic load
	// replays.
	BufferSnapshotMaxTransactionCount int `key:"transactionBufferSnapshotMaxTransactionCount" help:"transactions ended on a topic before its transaction buffer takes a snapshot"`
	BufferSnapshotMinTimeInMillis     int `key:"transactionBufferSnapshotMinTimeInMillis" help:"shortest interval between transaction buffer snapshots, in ms"`

	// BufferClientOperationTimeoutInMills bounds one END_TXN_ON_PARTITION or
	// END_TXN_ON_SUBSCRIPTION call from a coordinator to a topic's owner; a failed call is
	// retried until the transaction has ended everywhere.
	BufferClientOperationTimeoutInMills int `key:"transactionBufferClientOperationTimeoutInMills" help:"timeout of one end-of-transaction call to a topic owner, in ms"`
	// BufferClientMaxConcurrentRequests bounds those calls in flight per broker.
	BufferClientMaxConcurrentRequests int `key:"transactionBufferClientMaxConcurrentRequests" help:"end-of-transaction calls to topic owners in flight per broker"`
}

// DefaultTransactionConfig returns Pulsar's defaults (and ours for the bounds Pulsar lacks).
func DefaultTransactionConfig() TransactionConfig {
	return TransactionConfig{
		CoordinatorEnabled:                  false,
		NumCoordinators:                     16,
		MaxActivePerCoordinator:             100_000,
		MaxTimeoutMillis:                    3 * 3600 * 1000,
		BufferSnapshotMaxTransactionCount:   1000,
		BufferSnapshotMinTimeInMillis:       5000,
		BufferClientOperationTimeoutInMills: 3000,
		BufferClientMaxConcurrentRequests:   1000,
	}
}

// Validate checks the transaction settings.
func (c *TransactionConfig) Validate() error {
	return errors.Join(
		Between("numTransactionCoordinators", c.NumCoordinators, 1, 4096),
		AtLeast("maxActiveTransactionsPerCoordinator", c.MaxActivePerCoordinator, 0),
		Between("maxTransactionTimeoutMillis", c.MaxTimeoutMillis, 1000, 7*24*3600*1000),
		Between("transactionBufferSnapshotMaxTransactionCount", c.BufferSnapshotMaxTransactionCount, 1, 10_000_000),
		Between("transactionBufferSnapshotMinTimeInMillis", c.BufferSnapshotMinTimeInMillis, 10, 3_600_000),
		Between("transactionBufferClientOperationTimeoutInMills", c.BufferClientOperationTimeoutInMills, 10, 600_000),
		Between("transactionBufferClientMaxConcurrentRequests", c.BufferClientMaxConcurrentRequests, 1, 1_000_000),
	)
}
