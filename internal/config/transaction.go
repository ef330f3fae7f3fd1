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

	// Batched writes of the coordinators' logs: records appended within MaxDelayInMillis
	// of the first one share one ledger entry, up to MaxRecords records or MaxSize bytes.
	// Each operation is still answered once its entry is durable.
	LogBatchedWriteEnabled          bool `key:"transactionLogBatchedWriteEnabled" help:"batch the transaction coordinators' log records into shared entries"`
	LogBatchedWriteMaxRecords       int  `key:"transactionLogBatchedWriteMaxRecords" help:"most records in one batched coordinator log entry"`
	LogBatchedWriteMaxSize          int  `key:"transactionLogBatchedWriteMaxSize" help:"most bytes of records in one batched coordinator log entry"`
	LogBatchedWriteMaxDelayInMillis int  `key:"transactionLogBatchedWriteMaxDelayInMillis" help:"longest wait of a coordinator log record for its batch, in ms"`
	// The same for the topics' transaction state logs (pending acknowledgements and
	// transaction buffer snapshots).
	PendingAckBatchedWriteEnabled          bool `key:"transactionPendingAckBatchedWriteEnabled" help:"batch pending-acknowledgement log records into shared entries"`
	PendingAckBatchedWriteMaxRecords       int  `key:"transactionPendingAckBatchedWriteMaxRecords" help:"most records in one batched pending-acknowledgement log entry"`
	PendingAckBatchedWriteMaxSize          int  `key:"transactionPendingAckBatchedWriteMaxSize" help:"most bytes of records in one batched pending-acknowledgement log entry"`
	PendingAckBatchedWriteMaxDelayInMillis int  `key:"transactionPendingAckBatchedWriteMaxDelayInMillis" help:"longest wait of a pending-acknowledgement log record for its batch, in ms"`
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
		// Pulsar's defaults: off, 512 records, 4 MiB, 1 ms.
		LogBatchedWriteMaxRecords:              512,
		LogBatchedWriteMaxSize:                 4 << 20,
		LogBatchedWriteMaxDelayInMillis:        1,
		PendingAckBatchedWriteMaxRecords:       512,
		PendingAckBatchedWriteMaxSize:          4 << 20,
		PendingAckBatchedWriteMaxDelayInMillis: 1,
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
		// Pulsar's lower bounds (10 records, 128 KiB, 1 ms). Upper: the records a batched
		// entry's decoder accepts (internal/txn/log_batch.go), and a batch must fit one
		// bookie frame (nettyMaxFrameSizeBytes, 5 MiB by default).
		Between("transactionLogBatchedWriteMaxRecords", c.LogBatchedWriteMaxRecords, 10, 100_000),
		Between("transactionLogBatchedWriteMaxSize", c.LogBatchedWriteMaxSize, 128<<10, 4<<20),
		Between("transactionLogBatchedWriteMaxDelayInMillis", c.LogBatchedWriteMaxDelayInMillis, 1, 1000),
		Between("transactionPendingAckBatchedWriteMaxRecords", c.PendingAckBatchedWriteMaxRecords, 10, 100_000),
		Between("transactionPendingAckBatchedWriteMaxSize", c.PendingAckBatchedWriteMaxSize, 128<<10, 4<<20),
		Between("transactionPendingAckBatchedWriteMaxDelayInMillis", c.PendingAckBatchedWriteMaxDelayInMillis, 1, 1000),
	)
}
