package admin

import (
	"context"
	"fmt"
	"time"

	"github.com/magnetar-io/magnetar/internal/topics"
	"github.com/magnetar-io/magnetar/internal/wire"
)

// topicsAPI is Broker over the topic service: string topic names in, the API's JSON
// shapes out. Errors keep the topic service's classes, which errors.go maps to statuses.
type topicsAPI struct {
	svc        *topics.Service
	serviceURL func() string
}

var _ Broker = topicsAPI{}

func parse(topic string) (topics.Name, error) { return topics.ParseName(topic) }

// CreateTopic implements Broker.
func (a topicsAPI) CreateTopic(ctx context.Context, topic string, partitions int) error {
	n, err := parse(topic)
	if err != nil {
		return err
	}
	return a.svc.CreateTopic(ctx, n, partitions)
}

// DeleteTopic implements Broker.
func (a topicsAPI) DeleteTopic(ctx context.Context, topic string, force bool) error {
	n, err := parse(topic)
	if err != nil {
		return err
	}
	return a.svc.DeleteTopic(ctx, n, force)
}

// ListTopics implements Broker.
func (a topicsAPI) ListTopics(ctx context.Context, namespace, domain string) ([]string, error) {
	if domain != topics.DomainNonPersistent {
		domain = topics.DomainPersistent
	}
	return a.svc.ListTopics(ctx, namespace, domain)
}

// TopicStats implements Broker: the topic is loaded so its stored subscriptions show.
func (a topicsAPI) TopicStats(ctx context.Context, topic string) (topics.TopicStats, error) {
	t, err := a.load(ctx, topic)
	if err != nil {
		return topics.NewTopicStats(), err
	}
	return t.Stats(), nil
}

// LoadedTopicStats implements Broker: stats of the loaded topics only (a scrape must not
// load topics back).
func (a topicsAPI) LoadedTopicStats(context.Context) map[string]topics.TopicStats {
	return a.svc.LoadedTopicStats()
}

// load returns the topic, loading it (never creating it).
func (a topicsAPI) load(ctx context.Context, topic string) (*topics.Topic, error) {
	n, err := parse(topic)
	if err != nil {
		return nil, err
	}
	return a.svc.Topic(ctx, n, topics.Load{})
}

// MessageIDAt implements Broker: the first entry published at or after at.
func (a topicsAPI) MessageIDAt(ctx context.Context, topic string, at time.Time) (MessageID, error) {
	n, err := parse(topic)
	if err != nil {
		return MessageID{}, err
	}
	p, err := a.svc.MessageIDAt(ctx, n, at)
	if err != nil {
		return MessageID{}, err
	}
	return messageID(n, p), nil
}

// InternalStats implements Broker.
func (a topicsAPI) InternalStats(ctx context.Context, topic string) (any, error) {
	n, err := parse(topic)
	if err != nil {
		return nil, err
	}
	return a.svc.InternalStats(ctx, n)
}

func messageID(n topics.Name, p topics.Position) MessageID {
	return MessageID{LedgerID: p.LedgerID, EntryID: p.EntryID, PartitionIndex: n.Partition}
}

// LastMessageID implements Broker.
func (a topicsAPI) LastMessageID(ctx context.Context, topic string) (MessageID, error) {
	t, err := a.load(ctx, topic)
	if err != nil {
		return MessageID{}, err
	}
	p, bi, err := t.LastMessageID(ctx)
	if err != nil {
		return MessageID{}, err
	}
	id := messageID(t.Name(), p)
	if bi > 0 {
		id.BatchIndex = int(bi)
	}
	return id, nil
}

// Terminate implements Broker (producers are disconnected for good, consumers drain).
func (a topicsAPI) Terminate(ctx context.Context, topic string) (MessageID, error) {
	n, err := parse(topic)
	if err != nil {
		return MessageID{}, err
	}
	p, err := a.svc.TerminateTopic(ctx, n)
	if err != nil {
		return MessageID{}, err
	}
	return messageID(n, p), nil
}

// Unload implements Broker.
func (a topicsAPI) Unload(ctx context.Context, topic string) error {
	n, err := parse(topic)
	if err != nil {
		return err
	}
	return a.svc.UnloadTopic(ctx, n)
}

// Subscriptions implements Broker: the durable cursors and the subscriptions currently
// attached (readers included, as Pulsar lists them).
func (a topicsAPI) Subscriptions(ctx context.Context, topic string) ([]string, error) {
	n, err := parse(topic)
	if err != nil {
		return nil, err
	}
	return a.svc.Subscriptions(ctx, n)
}

// CreateSubscription implements Broker: at the earliest, latest or given message. Like a
// subscribe, it creates the topic when auto-creation allows.
func (a topicsAPI) CreateSubscription(ctx context.Context, topic, sub string, at MessageID) error {
	n, err := parse(topic)
	if err != nil {
		return err
	}
	return a.svc.CreateSubscription(ctx, n, sub, topics.Position{LedgerID: at.LedgerID, EntryID: at.EntryID})
}

// DeleteSubscription implements Broker.
func (a topicsAPI) DeleteSubscription(ctx context.Context, topic, sub string, force bool) error {
	n, err := parse(topic)
	if err != nil {
		return err
	}
	return a.svc.DeleteSubscription(ctx, n, sub, force)
}

// Skip implements Broker: n < 0 clears the backlog.
func (a topicsAPI) Skip(ctx context.Context, topic, sub string, n int64) error {
	name, err := parse(topic)
	if err != nil {
		return err
	}
	return a.svc.Skip(ctx, name, sub, n)
}

// ExpireMessages implements Broker.
func (a topicsAPI) ExpireMessages(ctx context.Context, topic, sub string, age time.Duration) error {
	n, err := parse(topic)
	if err != nil {
		return err
	}
	return a.svc.ExpireMessages(ctx, n, sub, age)
}

// ResetCursor implements Broker: consumers are disconnected and the subscription's dispatch
// state is dropped with the cursor move.
func (a topicsAPI) ResetCursor(ctx context.Context, topic, sub string, id *MessageID, at time.Time) error {
	n, err := parse(topic)
	if err != nil {
		return err
	}
	var p *topics.Position
	if id != nil {
		p = &topics.Position{LedgerID: id.LedgerID, EntryID: id.EntryID}
	}
	return a.svc.ResetSubscription(ctx, n, sub, p, at)
}

// Peek implements Broker.
func (a topicsAPI) Peek(ctx context.Context, topic, sub string, k int) (RawMessage, error) {
	n, err := parse(topic)
	if err != nil {
		return RawMessage{}, err
	}
	e, err := a.svc.Peek(ctx, n, sub, k)
	if err != nil {
		return RawMessage{}, err
	}
	return rawMessage(n, e)
}

// ExamineMessage implements Broker.
func (a topicsAPI) ExamineMessage(ctx context.Context, topic string, latest bool, pos int64) (RawMessage, error) {
	n, err := parse(topic)
	if err != nil {
		return RawMessage{}, err
	}
	e, err := a.svc.ExamineMessage(ctx, n, latest, pos)
	if err != nil {
		return RawMessage{}, err
	}
	return rawMessage(n, e)
}

// Message implements Broker.
func (a topicsAPI) Message(ctx context.Context, topic string, id MessageID) (RawMessage, error) {
	n, err := parse(topic)
	if err != nil {
		return RawMessage{}, err
	}
	e, err := a.svc.Message(ctx, n, topics.Position{LedgerID: id.LedgerID, EntryID: id.EntryID})
	if err != nil {
		return RawMessage{}, err
	}
	return rawMessage(n, e)
}

// rawMessage splits a stored entry into metadata and payload (as stored: a batch stays a
// batch body, compressed stays compressed; pulsaradmin splits batches itself).
func rawMessage(n topics.Name, e topics.Entry) (RawMessage, error) {
	p := e.Position
	pe, err := wire.ParseEntry(e.Data, false)
	if err != nil {
		return RawMessage{}, fmt.Errorf("entry %s of %s: %w", p, n, err)
	}
	md, err := wire.ParseMetadata(pe.Metadata)
	if err != nil {
		return RawMessage{}, fmt.Errorf("entry %s of %s: %w", p, n, err)
	}
	m := RawMessage{ID: messageID(n, p), PublishTime: int64(md.GetPublishTime()), Properties: map[string]string{}, Payload: pe.Payload,
		Key: md.GetPartitionKey(), EventTime: int64(md.GetEventTime()), ProducerName: md.GetProducerName(), SequenceID: int64(md.GetSequenceId())}
	if md.NumMessagesInBatch != nil {
		m.NumBatch = int(md.GetNumMessagesInBatch())
	}
	for _, kv := range md.GetProperties() {
		m.Properties[kv.GetKey()] = kv.GetValue()
	}
	return m, nil
}

// ServiceURL implements Broker.
func (a topicsAPI) ServiceURL() string {
	if a.serviceURL == nil {
		return ""
	}
	return a.serviceURL()
}

var _ Offloader = topicsAPI{}

// TriggerOffload implements Offloader.
func (a topicsAPI) TriggerOffload(ctx context.Context, topic string, before MessageID) error {
	n, err := parse(topic)
	if err != nil {
		return err
	}
	return a.svc.TriggerOffload(ctx, n, topics.Position{LedgerID: before.LedgerID, EntryID: before.EntryID})
}

// OffloadStatus implements Offloader.
func (a topicsAPI) OffloadStatus(ctx context.Context, topic string) (OffloadStatus, error) {
	n, err := parse(topic)
	if err != nil {
		return OffloadStatus{}, err
	}
	st, err := a.svc.OffloadStatus(ctx, n)
	if err != nil {
		return OffloadStatus{}, err
	}
	return OffloadStatus{Status: st.Status, LastError: st.LastError,
		FirstUnoffloadedMessage: messageID(n, st.FirstUnoffloaded)}, nil
}

var _ Compactor = topicsAPI{}

// Compact implements Compactor.
func (a topicsAPI) Compact(ctx context.Context, topic string) error {
	n, err := parse(topic)
	if err != nil {
		return err
	}
	return a.svc.Compact(ctx, n)
}

// CompactionStatus implements Compactor.
func (a topicsAPI) CompactionStatus(ctx context.Context, topic string) (LongRunningProcessStatus, error) {
	n, err := parse(topic)
	if err != nil {
		return LongRunningProcessStatus{}, err
	}
	st, err := a.svc.CompactionStatus(ctx, n)
	return LongRunningProcessStatus{Status: st.Status, LastError: st.LastError}, err
}
