package topics

import (
	"context"
	"fmt"

	"github.com/magnetar-io/magnetar/internal/wire"
)

// The stats model: Pulsar's TopicStats JSON, which the admin API serves as is
// (topics stats, partitioned-stats) and the metrics collectors read. Rates (msgRateIn,
// ...) are filled in by whoever observes the counters over time (the admin API does).

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
	// LastConsumedFlowTimestamp is when the consumer last sent FLOW (Unix ms).
	LastConsumedFlowTimestamp int64 `json:"lastConsumedFlowTimestamp"`
}

// SubscriptionStats is Pulsar's SubscriptionStats JSON.
type SubscriptionStats struct {
	Type              string  `json:"type"`
	MsgBacklog        int64   `json:"msgBacklog"`
	MsgBacklogNoDelay int64   `json:"msgBacklogNoDelayed"`
	MsgDelayed        int     `json:"msgDelayed"` // held by delayed delivery (delayed.go)
	UnackedMessages   int64   `json:"unackedMessages"`
	MsgRateOut        float64 `json:"msgRateOut"`
	MsgThroughputOut  float64 `json:"msgThroughputOut"`
	MsgOutCounter     int64   `json:"msgOutCounter"`
	BytesOutCounter   int64   `json:"bytesOutCounter"`
	BacklogSize       int64   `json:"backlogSize"`
	IsDurable         bool    `json:"isDurable"`
	IsReplicated      bool    `json:"isReplicated"`
	// ActiveConsumerName is the active consumer of an Exclusive or Failover subscription.
	ActiveConsumerName string          `json:"activeConsumerName,omitempty"`
	Consumers          []ConsumerStats `json:"consumers"`
	// Always {} here (Pulsar sends both maps, and clients compare them with {}): the
	// recently joined Key_Shared consumers' read limits are not listed, and subscription
	// properties are not kept.
	ConsumersAfterMarkDeletePosition map[string]string `json:"consumersAfterMarkDeletePosition"`
	SubscriptionProperties           map[string]string `json:"subscriptionProperties"`
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
	// TopicCreationTimeStamp is when the topic was recorded (Unix ms; for a partition, its
	// partitioned topic); LastPublishTimeStamp is the broker time of the newest stored
	// entry, 0 before the first.
	TopicCreationTimeStamp int64 `json:"topicCreationTimeStamp"`
	LastPublishTimeStamp   int64 `json:"lastPublishTimeStamp"`
	// Compaction is the topic's last compaction run (compaction.go).
	Compaction CompactionStats `json:"compaction"`
}

// NewTopicStats returns empty stats with non-nil lists, as Pulsar sends them.
func NewTopicStats() TopicStats {
	return TopicStats{Publishers: []PublisherStats{}, Subscriptions: map[string]SubscriptionStats{},
		Replication: map[string]any{}, DeduplicationStatus: "Disabled"}
}

// Add folds o into s (partitioned stats: sums, subscriptions merged by name).
func (s *TopicStats) Add(o TopicStats) {
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
	if o.TopicCreationTimeStamp > 0 && (s.TopicCreationTimeStamp == 0 || o.TopicCreationTimeStamp < s.TopicCreationTimeStamp) {
		s.TopicCreationTimeStamp = o.TopicCreationTimeStamp
	}
	s.LastPublishTimeStamp = max(s.LastPublishTimeStamp, o.LastPublishTimeStamp)
	s.Publishers = append(s.Publishers, o.Publishers...)
	for name, sub := range o.Subscriptions {
		agg, ok := s.Subscriptions[name]
		if !ok {
			agg = newSubscriptionStats(sub.Type, sub.IsDurable)
		}
		agg.MsgBacklog += sub.MsgBacklog
		agg.MsgBacklogNoDelay += sub.MsgBacklogNoDelay
		agg.MsgDelayed += sub.MsgDelayed
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

// Stats is a snapshot of the loaded topic: counters, producers, the subscriptions with
// their consumers, and the durable subscriptions that live only as cursors.
func (t *Topic) Stats() TopicStats {
	out := NewTopicStats()
	out.TopicCreationTimeStamp = t.created
	out.Compaction = t.compactionStats()
	if t.log != nil {
		out.StorageSize = t.log.storageSize()
		out.LastPublishTimeStamp = t.log.lastPublish.Load()
	}
	out.MsgInCounter, out.BytesInCounter = t.counters.msgsIn.Load(), t.counters.bytesIn.Load()
	out.MsgOutCounter, out.BytesOutCounter = t.counters.msgsOut.Load(), t.counters.bytesOut.Load()
	if out.MsgInCounter > 0 {
		out.AverageMsgSize = float64(out.BytesInCounter) / float64(out.MsgInCounter)
	}
	t.mu.Lock()
	for _, p := range t.producers {
		out.Publishers = append(out.Publishers, PublisherStats{AccessMode: p.mode.String(), ProducerID: p.id,
			ProducerName: p.name, Address: p.client.Address(), ClientVersion: p.client.Version(), Metadata: metadataJSON(p.metadata)})
	}
	subs := make([]*Subscription, 0, len(t.subs))
	for _, sub := range t.subs {
		subs = append(subs, sub)
	}
	t.mu.Unlock()
	for _, sub := range subs {
		ss := newSubscriptionStats("", sub.durable)
		if sub.cursor != nil {
			ss.MsgBacklog = sub.cursor.backlog()
			ss.MsgBacklogNoDelay = ss.MsgBacklog
		}
		sub.mu.Lock()
		ss.Type = sub.d.kind().String()
		ss.MsgDelayed = sub.delayed.len()
		for _, cs := range sub.consumers {
			ss.UnackedMessages += int64(cs.unacked)
			st := ConsumerStats{ConsumerName: cs.name, AvailablePermits: cs.permits, UnackedMessages: cs.unacked,
				Address: cs.client.Address(), Metadata: metadataJSON(cs.metadata), LastConsumedFlowTimestamp: cs.lastFlow.Load()}
			if v, ok := cs.client.(ConsumerVersion); ok {
				st.ClientVersion = v.Version()
			}
			ss.Consumers = append(ss.Consumers, st)
		}
		sub.mu.Unlock()
		out.Subscriptions[sub.name] = ss
	}
	// Durable subscriptions without consumers live only as cursors.
	if t.log != nil {
		for _, c := range t.log.subscriptionCursors() {
			ss, ok := out.Subscriptions[c.Name()]
			if !ok {
				ss = newSubscriptionStats(Exclusive.String(), true)
			}
			ss.MsgBacklog = c.Backlog()
			ss.MsgBacklogNoDelay = ss.MsgBacklog
			ss.BacklogSize = c.BacklogSize()
			out.Subscriptions[c.Name()] = ss
			out.BacklogSize = max(out.BacklogSize, ss.BacklogSize)
		}
	}
	return out
}

// newSubscriptionStats is an empty subscription's stats, with non-nil lists and maps as
// Pulsar sends them.
func newSubscriptionStats(typ string, durable bool) SubscriptionStats {
	return SubscriptionStats{Type: typ, IsDurable: durable, Consumers: []ConsumerStats{},
		ConsumersAfterMarkDeletePosition: map[string]string{}, SubscriptionProperties: map[string]string{}}
}

// metadataJSON is a client's metadata as stats show it: {} when it has none.
func metadataJSON(m map[string]string) map[string]string {
	if m == nil {
		return map[string]string{}
	}
	return m
}

// TopicStats returns the stats of a topic loaded on this broker; a topic that exists but
// is not loaded has empty stats; one that does not exist wraps ErrTopicNotFound. It does not
// load the topic (the admin API loads it first, so stored subscriptions show).
func (s *Service) TopicStats(ctx context.Context, name Name) (TopicStats, error) {
	if t := s.Loaded(name); t != nil {
		return t.Stats(), nil
	}
	exists, err := s.topicExists(ctx, name)
	if err != nil {
		return NewTopicStats(), err
	}
	if !exists {
		return NewTopicStats(), fmt.Errorf("%w: %s", wire.ErrTopicNotFound, name)
	}
	return NewTopicStats(), nil
}

// LoadedTopicStats is the stats of each topic loaded on this broker (partitions one by
// one), by full name, without loading any.
func (s *Service) LoadedTopicStats() map[string]TopicStats {
	out := map[string]TopicStats{}
	for _, t := range s.LoadedTopics() {
		out[t.full] = t.Stats()
	}
	return out
}
