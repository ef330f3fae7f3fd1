package kafka

import (
	"context"

	"github.com/magnetar-io/magnetar/internal/metadata"
	"github.com/magnetar-io/magnetar/internal/resources"
	"github.com/magnetar-io/magnetar/internal/txn"
)

// Backend is what the Kafka front end needs from the rest of the broker: the topic service
// (internal/topics) for logs, topic lifecycle and ownership, the metadata store for the list
// of brokers. The production implementation adapts the topic service (backend_topics.go);
// tests of this package use an in-memory twin (memory_test.go).
type Backend interface {
	// Partitions is the partition count of topic full (persistent://t/n/x): 0 for a
	// non-partitioned topic, ErrUnknownTopic (wrapped) if it does not exist.
	Partitions(ctx context.Context, full string) (int, error)
	// CreateTopic creates full with n partitions (0: non-partitioned); ErrTopicExists if it
	// exists. configs are topic-level settings already validated (configs.go).
	CreateTopic(ctx context.Context, full string, n int, configs map[string]string) error
	// DeleteTopic deletes full and all its partitions.
	DeleteTopic(ctx context.Context, full string) error
	// AddPartitions grows a partitioned topic to n partitions.
	AddPartitions(ctx context.Context, full string, n int) error
	// ListTopics lists the base topics (full names, no -partition-i) of every namespace the
	// caller may see.
	ListTopics(ctx context.Context) ([]string, error)
	// NamespaceExists tells whether tenant/namespace exists.
	NamespaceExists(ctx context.Context, tenant, namespace string) bool
	// AutoCreate says whether a Kafka client naming a missing topic in tenant/namespace may
	// create it and with how many partitions (the broker's allowAutoTopicCreation policy).
	AutoCreate(ctx context.Context, tenant, namespace string) (ok bool, partitions int)

	// Brokers lists the live brokers that speak Kafka, this one included.
	Brokers(ctx context.Context) ([]Node, error)
	// Leader is the node that owns the partition (the broker a client must produce to and
	// fetch from), looking it up (and assigning it) as the Pulsar lookup does.
	Leader(ctx context.Context, partition string) (int32, error)
	// Coordinator is the node coordinating group (or transactional id) key: the owner of
	// the bundle of the key's offsets topic, so every broker answers the same.
	Coordinator(ctx context.Context, key string) (int32, error)

	// Open loads the log of one partition (a Pulsar topic name, -partition-i included for a
	// partitioned topic) on this broker; it fails with ErrNotLeader (wrapped) when another
	// broker owns it.
	Open(ctx context.Context, partition string) (Log, error)
	// NextProducerID allocates a producer id unique in the cluster and across restarts
	// (InitProducerId).
	NextProducerID(ctx context.Context) (int64, error)

	// Committed offsets. A group's committed offset on a partition is kept by the group's
	// durable subscription on that partition (named after the group), so Pulsar's backlog,
	// retention and stats see it: its mark-delete position is the entry holding offset-1,
	// and the exact offset and metadata are properties of the cursor. The backend routes
	// to the partition's owner when that is another broker.
	CommitOffset(ctx context.Context, partition, group string, offset int64, metadata string) error
	// StoreOffset keeps a commit in the metadata store only (the record CommittedOffset
	// weighs against the cursor by commit time): for a commit made on a broker that does not
	// coordinate the group (a Kafka transaction's offsets, applied by its transaction
	// coordinator), whose cursor write the group's coordinator could not read when another
	// broker owns the partition.
	StoreOffset(ctx context.Context, partition, group string, offset int64, metadata string) error
	// CommittedOffset is the group's committed offset on partition, ok false if none.
	CommittedOffset(ctx context.Context, partition, group string) (offset int64, metadata string, ok bool, err error)
	// DeleteOffset removes the group's subscription from partition.
	DeleteOffset(ctx context.Context, partition, group string) error

	// Group records: one small durable record per group (the partitions it committed to,
	// groups.go), so OffsetFetch of all partitions, ListGroups and DeleteGroups find a
	// group's offsets after a restart or on a new coordinator.
	SaveGroup(ctx context.Context, group string, data []byte) error
	// LoadGroup returns the record, nil if there is none.
	LoadGroup(ctx context.Context, group string) ([]byte, error)
	ListGroups(ctx context.Context) ([]string, error)
	DeleteGroup(ctx context.Context, group string) error

	// Configs returns the topic-level settings of full in Kafka's names (configs.go).
	Configs(ctx context.Context, full string) (map[string]string, error)
	// SetConfigs sets (value non-nil) or removes (nil) topic-level settings of full.
	SetConfigs(ctx context.Context, full string, set map[string]*string) error

	// Transactions (txn.go). TxnCoordinator is the coordinator of internal/txn (the one
	// Pulsar transactions use) that transactional id maps to and the node serving it; c is
	// nil when that is another node. It fails with a COORDINATOR_NOT_AVAILABLE error when
	// transactions are off (transactionCoordinatorEnabled).
	TxnCoordinator(ctx context.Context, transactionalID string) (c *txn.Coordinator, node int32, err error)
	// TxnProducer reads a transactional id's record (resources.ErrNotFound if none) and
	// PutTxnProducer writes it if it is still at ver (metadata.NotExists: new), returning
	// the new version (metadata.ErrBadVersion, wrapped, when it changed).
	TxnProducer(ctx context.Context, transactionalID string) (resources.KafkaTxnProducer, metadata.Version, error)
	PutTxnProducer(ctx context.Context, transactionalID string, p resources.KafkaTxnProducer, ver metadata.Version) (metadata.Version, error)
	// TxnProducers lists the transactional ids that have a record (ListTransactions).
	TxnProducers(ctx context.Context) ([]string, error)

	// SCRAM credentials (scram.go), by mechanism name, one record per user in the metadata
	// store. ScramUser returns an empty map for a user without any.
	ScramUser(ctx context.Context, user string) (map[string]resources.KafkaScramCredential, error)
	// ScramUsers lists the users that have credentials, sorted.
	ScramUsers(ctx context.Context) ([]string, error)
	// UpdateScramUser changes one user's credentials atomically: modify edits the map (empty
	// for a new user) and its error aborts the change.
	UpdateScramUser(ctx context.Context, user string, modify func(map[string]resources.KafkaScramCredential) error) error

	// Client quotas (quotas.go), one record per entity in the metadata store.
	ClientQuotas(ctx context.Context) ([]resources.KafkaQuota, error)
	// UpdateClientQuota changes the record of the entity called key atomically (modify
	// sees an empty one for a new entity; one left without values is removed).
	UpdateClientQuota(ctx context.Context, key string, modify func(*resources.KafkaQuota) error) error
}

// Node is one broker as Kafka's Metadata lists it.
type Node struct {
	ID   int32
	Host string
	Port int32
	Rack *string
}

// Log is one partition's log as the Kafka protocol sees it: a sequence of entries, each
// holding Count messages with contiguous offsets (the index of its broker entry metadata
// is the last one's, PIP-70).
type Log interface {
	// Append stores one entry (Pulsar format from the 0x0e01 magic on; the log keeps the
	// slice) holding count messages and calls done with the offset of its first message
	// once it is durable (or with an error). Calls to done come in Append order. tx, when
	// not nil, is the transaction the entry belongs to (hidden from committed readers
	// until it commits).
	Append(entry []byte, count int, tx *txn.ID, done func(base int64, err error))
	// Read returns the entries holding offsets >= offset in order, about maxBytes of them
	// (at least one whole entry if any is stored), without waiting. The first entry may
	// start before offset (an entry holds several offsets).
	Read(ctx context.Context, offset int64, maxBytes int) ([]Entry, error)
	// Wait returns a channel closed once an entry with offsets >= offset is stored (at once
	// if one is), for a Fetch's long poll.
	Wait(offset int64) <-chan struct{}
	// HighWatermark is the offset the next stored message will get (every offset below it
	// is durable and readable).
	HighWatermark() int64
	// LastStable is the last stable offset: the first offset of the oldest transaction
	// still open, the high watermark when none is (read_committed reads below it).
	LastStable(ctx context.Context) (int64, error)
	// StartOffset is the first offset still stored (retention and DeleteRecords move it).
	StartOffset() int64
	// OffsetForTime is the first offset whose message was published at or after ms
	// (milliseconds since the epoch), or HighWatermark if none.
	OffsetForTime(ctx context.Context, ms int64) (int64, error)
	// Truncate removes every message before offset (DeleteRecords).
	Truncate(ctx context.Context, offset int64) error
	// TxnOpen tells whether transaction id is still open on this partition (it wrote
	// here and no marker ended it yet): DescribeProducers' current transaction.
	TxnOpen(id txn.ID) bool
	// AbortTxn aborts transaction id (WriteTxnMarkers of kafka-transactions.sh abort):
	// the whole transaction through its coordinator when that is loaded here and still
	// knows it, so it stays atomic; else (a transaction no coordinator will end, which
	// is what the tool is for) on this partition alone.
	AbortTxn(ctx context.Context, id txn.ID) error
}

// Entry is one stored entry: offsets [Base, Base+Count).
type Entry struct {
	Base  int64
	Count int
	Data  []byte // from the 0x0e01 magic on; never modified
	Kind  EntryKind
}

// EntryKind tells a Fetch how to send an entry.
type EntryKind uint8

// Entry kinds.
const (
	// EntryData is a plain entry or one of a committed or still open transaction.
	EntryData EntryKind = iota
	// EntryAborted is an entry of an aborted transaction: read_committed consumers never
	// get its records.
	EntryAborted
	// EntryCommitMarker and EntryAbortMarker are transaction markers (control batches).
	EntryCommitMarker
	EntryAbortMarker
)
