package admin

import (
	"context"
	"errors"
	"time"

	"github.com/magnetar-io/magnetar/internal/topics"
)

// ErrNotAllowed marks an operation refused in the topic's current state (active producers
// or consumers without force, a shrinking partition count): Pulsar answers 412.
var ErrNotAllowed = errors.New("admin: not allowed")

// ErrNotSupported marks an endpoint or a variant this implementation does not offer (501).
var ErrNotSupported = errors.New("admin: not supported")

// Broker is what the REST handlers need from the topics of this broker, in the API's terms:
// full topic names ("persistent://tenant/ns/local", partitions as local-partition-i), its
// JSON shapes, and errors the error table (errors.go) maps to statuses. topicsAPI (over the
// topic service, topics_api.go) implements it.
type Broker interface {
	// CreateTopic records a non-partitioned topic (partitions 0) or a partitioned one;
	// an existing topic is resources.ErrAlreadyExists.
	CreateTopic(ctx context.Context, topic string, partitions int) error
	// DeleteTopic deletes a non-partitioned topic or one partition.
	DeleteTopic(ctx context.Context, topic string, force bool) error
	// ListTopics lists the non-partitioned topics and partitions of "tenant/ns" in domain.
	ListTopics(ctx context.Context, namespace, domain string) ([]string, error)
	TopicStats(ctx context.Context, topic string) (topics.TopicStats, error)
	// InternalStats is the PersistentTopicInternalStats JSON value of a persistent topic.
	InternalStats(ctx context.Context, topic string) (any, error)
	LastMessageID(ctx context.Context, topic string) (MessageID, error)
	Terminate(ctx context.Context, topic string) (MessageID, error)
	Unload(ctx context.Context, topic string) error
	Subscriptions(ctx context.Context, topic string) ([]string, error)
	CreateSubscription(ctx context.Context, topic, sub string, at MessageID) error
	DeleteSubscription(ctx context.Context, topic, sub string, force bool) error
	// Skip acknowledges the next n messages of sub; n < 0 clears the whole backlog.
	Skip(ctx context.Context, topic, sub string, n int64) error
	// ExpireMessages acknowledges the messages of sub published before now-age.
	ExpireMessages(ctx context.Context, topic, sub string, age time.Duration) error
	// ResetCursor makes id (or, if id is nil, the first message published at or after t)
	// the next message sub delivers; its consumers are disconnected and reconnect.
	ResetCursor(ctx context.Context, topic, sub string, id *MessageID, t time.Time) error
	// Peek returns the k-th (from 1) unacknowledged entry of sub.
	Peek(ctx context.Context, topic, sub string, k int) (RawMessage, error)
	// MessageIDAt is the id of the first message published at or after t (the position
	// after the last message if there is none).
	MessageIDAt(ctx context.Context, topic string, t time.Time) (MessageID, error)
	// ExamineMessage returns the pos-th (from 1) stored entry counted from the oldest, or
	// from the newest if latest.
	ExamineMessage(ctx context.Context, topic string, latest bool, pos int64) (RawMessage, error)
	// Message returns the entry with the given id.
	Message(ctx context.Context, topic string, id MessageID) (RawMessage, error)
	// LoadedTopicStats is the stats of each topic (partitions one by one) loaded on this
	// broker, by full name, without loading any.
	LoadedTopicStats(ctx context.Context) map[string]topics.TopicStats
	// ServiceURL is the binary protocol URL lookups answer with (pulsar://host:port).
	ServiceURL() string
}

// Storage is what the admin API shows of the storage layer beyond its records, as the
// ledger client sees it (brokerd adapts internal/ledger to it); nil answers 501.
type Storage interface {
	// BookieStates lists the registered and the decommissioned bookies.
	BookieStates(ctx context.Context) ([]BookieState, error)
	// UnderReplicated lists the ledgers with a fragment on a bookie that is not registered.
	UnderReplicated(ctx context.Context) ([]UnderReplicatedLedger, error)
}

// BookieState is one bookie as `magnetar admin bookies list` shows it.
type BookieState struct {
	Address        string `json:"address"`
	Rack           string `json:"rack"`
	State          string `json:"state"` // writable, readonly, or gone (decommissioned, no registration)
	Decommissioned bool   `json:"decommissioned"`
}

// UnderReplicatedLedger is a ledger the auditor still has to re-replicate.
type UnderReplicatedLedger struct {
	LedgerID int64    `json:"ledgerId"`
	Missing  []string `json:"missingBookies"`
}

// MessageID is Pulsar's MessageId JSON.
type MessageID struct {
	LedgerID       int64 `json:"ledgerId"`
	EntryID        int64 `json:"entryId"`
	PartitionIndex int   `json:"partitionIndex"`
	BatchIndex     int   `json:"batchIndex,omitempty"`
}

// RawMessage is a stored entry as peek and get-message-by-id return it.
type RawMessage struct {
	ID          MessageID
	PublishTime int64 // ms
	Properties  map[string]string
	// Key is the partition key, EventTime the producer's timestamp (ms, 0: none), and
	// ProducerName/SequenceID who published it (X-Pulsar-partition-key, -event-time,
	// -producer-name, -sequence-id, as Pulsar's peek answers).
	Key          string
	EventTime    int64
	ProducerName string
	SequenceID   int64
	// NumBatch is num_messages_in_batch when the entry is a batch (the payload is then the
	// batch body), 0 otherwise.
	NumBatch int
	Payload  []byte
}

// PartitionedTopicStats is Pulsar's PartitionedTopicStats JSON.
type PartitionedTopicStats struct {
	topics.TopicStats
	Metadata   partitionsJSON               `json:"metadata"`
	Partitions map[string]topics.TopicStats `json:"partitions"`
}

type partitionsJSON struct {
	Partitions int `json:"partitions"`
}
