package admin

import (
	"context"
	"errors"
	"time"
)

// ErrNotAllowed marks an operation refused in the topic's current state (active producers
// or consumers without force, a shrinking partition count): Pulsar answers 412.
var ErrNotAllowed = errors.New("admin: not allowed")

// ErrNotSupported marks an endpoint or a variant this implementation does not offer (501).
var ErrNotSupported = errors.New("admin: not supported")

// Broker is what the admin layer needs from the broker that owns the topics. Topic names
// are full names ("persistent://tenant/ns/local", partitions as local-partition-i); the
// broker reports a missing topic or subscription with an error the error table maps to 404
// (resources.ErrNotFound or one it wraps itself and lists in errors.go). Defined here, not
// in the broker, so this package does not depend on broker internals.
type Broker interface {
	// CreateTopic records a non-partitioned topic (partitions 0) or a partitioned one;
	// an existing topic is resources.ErrAlreadyExists.
	CreateTopic(ctx context.Context, topic string, partitions int) error
	// DeleteTopic deletes a non-partitioned topic or one partition.
	DeleteTopic(ctx context.Context, topic string, force bool) error
	// ListTopics lists the non-partitioned topics and partitions of "tenant/ns" in domain.
	ListTopics(ctx context.Context, namespace, domain string) ([]string, error)
	TopicStats(ctx context.Context, topic string) (TopicStats, error)
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
	LoadedTopicStats(ctx context.Context) map[string]TopicStats
	// ServiceURL is the binary protocol URL lookups answer with (pulsar://host:port).
	ServiceURL() string
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
	// NumBatch is num_messages_in_batch when the entry is a batch (the payload is then the
	// batch body), 0 otherwise.
	NumBatch int
	Payload  []byte
}

// PublisherStats is Pulsar's PublisherStats JSON.
type PublisherStats struct {
	AccessMode      string            `json:"accessMode"`
	ProducerID      uint64            `json:"producerId"`
	MsgRateIn       float64           `json:"msgRateIn"`
	MsgThroughputIn float64           `json:"msgThroughputIn"`
	AverageMsgSize  float64           `json:"averageMsgSize"`
	ProducerName    string            `json:"producerName"`
	Address         string            `json:"address"`
	ConnectedSince  string            `json:"connectedSince"`
	ClientVersion   string            `json:"clientVersion"`
	Metadata        map[string]string `json:"metadata"`
}

// ConsumerStats is Pulsar's ConsumerStats JSON.
type ConsumerStats struct {
	ConsumerName     string            `json:"consumerName"`
	Address          string            `json:"address"`
	ConnectedSince   string            `json:"connectedSince"`
	ClientVersion    string            `json:"clientVersion"`
	AvailablePermits int               `json:"availablePermits"`
	UnackedMessages  int               `json:"unackedMessages"`
	MsgRateOut       float64           `json:"msgRateOut"`
	MsgThroughputOut float64           `json:"msgThroughputOut"`
	MsgOutCounter    int64             `json:"msgOutCounter"`
	BytesOutCounter  int64             `json:"bytesOutCounter"`
	Metadata         map[string]string `json:"metadata"`
}

// SubscriptionStats is Pulsar's SubscriptionStats JSON.
type SubscriptionStats struct {
	Type               string          `json:"type"`
	MsgBacklog         int64           `json:"msgBacklog"`
	MsgBacklogNoDelay  int64           `json:"msgBacklogNoDelayed"`
	UnackedMessages    int64           `json:"unackedMessages"`
	MsgRateOut         float64         `json:"msgRateOut"`
	MsgThroughputOut   float64         `json:"msgThroughputOut"`
	MsgOutCounter      int64           `json:"msgOutCounter"`
	BytesOutCounter    int64           `json:"bytesOutCounter"`
	BacklogSize        int64           `json:"backlogSize"`
	IsDurable          bool            `json:"isDurable"`
	IsReplicated       bool            `json:"isReplicated"`
	ActiveConsumerName string          `json:"activeConsumerName,omitempty"`
	Consumers          []ConsumerStats `json:"consumers"`
}

// TopicStats is Pulsar's TopicStats JSON (also the aggregate part of PartitionedTopicStats).
type TopicStats struct {
	MsgRateIn           float64                      `json:"msgRateIn"`
	MsgRateOut          float64                      `json:"msgRateOut"`
	MsgThroughputIn     float64                      `json:"msgThroughputIn"`
	MsgThroughputOut    float64                      `json:"msgThroughputOut"`
	MsgInCounter        int64                        `json:"msgInCounter"`
	MsgOutCounter       int64                        `json:"msgOutCounter"`
	BytesInCounter      int64                        `json:"bytesInCounter"`
	BytesOutCounter     int64                        `json:"bytesOutCounter"`
	AverageMsgSize      float64                      `json:"averageMsgSize"`
	StorageSize         int64                        `json:"storageSize"`
	BacklogSize         int64                        `json:"backlogSize"`
	Publishers          []PublisherStats             `json:"publishers"`
	Subscriptions       map[string]SubscriptionStats `json:"subscriptions"`
	Replication         map[string]any               `json:"replication"`
	DeduplicationStatus string                       `json:"deduplicationStatus"`
}

// PartitionedTopicStats is Pulsar's PartitionedTopicStats JSON.
type PartitionedTopicStats struct {
	TopicStats
	Metadata   partitionsJSON        `json:"metadata"`
	Partitions map[string]TopicStats `json:"partitions"`
}

type partitionsJSON struct {
	Partitions int `json:"partitions"`
}

// add folds o into s (partitioned stats: sums, subscriptions merged by name).
func (s *TopicStats) add(o TopicStats) {
	s.MsgRateIn += o.MsgRateIn
	s.MsgRateOut += o.MsgRateOut
	s.MsgThroughputIn += o.MsgThroughputIn
	s.MsgThroughputOut += o.MsgThroughputOut
	s.MsgInCounter += o.MsgInCounter
	s.MsgOutCounter += o.MsgOutCounter
	s.BytesInCounter += o.BytesInCounter
	s.BytesOutCounter += o.BytesOutCounter
	if s.MsgInCounter > 0 {
		s.AverageMsgSize = float64(s.BytesInCounter) / float64(s.MsgInCounter)
	}
	s.StorageSize += o.StorageSize
	s.BacklogSize += o.BacklogSize
	s.Publishers = append(s.Publishers, o.Publishers...)
	for name, sub := range o.Subscriptions {
		agg, ok := s.Subscriptions[name]
		if !ok {
			agg = SubscriptionStats{Type: sub.Type, IsDurable: sub.IsDurable, Consumers: []ConsumerStats{}}
		}
		agg.MsgBacklog += sub.MsgBacklog
		agg.MsgBacklogNoDelay += sub.MsgBacklogNoDelay
		agg.UnackedMessages += sub.UnackedMessages
		agg.MsgRateOut += sub.MsgRateOut
		agg.MsgThroughputOut += sub.MsgThroughputOut
		agg.MsgOutCounter += sub.MsgOutCounter
		agg.BytesOutCounter += sub.BytesOutCounter
		agg.BacklogSize += sub.BacklogSize
		agg.Consumers = append(agg.Consumers, sub.Consumers...)
		s.Subscriptions[name] = agg
	}
}

// NewTopicStats returns empty stats with non-nil lists, as Pulsar sends them.
func NewTopicStats() TopicStats {
	return TopicStats{Publishers: []PublisherStats{}, Subscriptions: map[string]SubscriptionStats{},
		Replication: map[string]any{}, DeduplicationStatus: "Disabled"}
}
