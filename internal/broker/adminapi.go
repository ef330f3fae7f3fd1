package broker

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/magnetar-io/magnetar/internal/admin"
	"github.com/magnetar-io/magnetar/internal/managedledger"
	"github.com/magnetar-io/magnetar/internal/metadata"
	"github.com/magnetar-io/magnetar/internal/resources"
	"github.com/magnetar-io/magnetar/internal/wire"
	"github.com/magnetar-io/magnetar/internal/wire/pb"
)

// AdminAPI adapts the broker to admin.Broker: string topic names in, admin's JSON shapes
// out, and broker errors translated to the sentinels the admin error table knows.
type AdminAPI struct {
	s *Server
}

var _ admin.Broker = AdminAPI{}

// Admin returns the broker's admin adapter.
func (s *Server) Admin() AdminAPI { return AdminAPI{s} }

// adminErr maps broker errors to admin/resources sentinels (status codes).
func adminErr(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, wire.ErrTopicNotFound), errors.Is(err, wire.ErrSubscriptionNotFound),
		errors.Is(err, metadata.ErrNotFound), errors.Is(err, managedledger.ErrCursorNotFound):
		return fmt.Errorf("%w: %w", resources.ErrNotFound, err)
	case errors.Is(err, metadata.ErrBadVersion), errors.Is(err, ErrSubscriptionExists):
		return fmt.Errorf("%w: %w", resources.ErrAlreadyExists, err)
	case errors.Is(err, wire.ErrNotAllowed), errors.Is(err, wire.ErrTopicTerminated):
		return fmt.Errorf("%w: %w", admin.ErrNotAllowed, err)
	case errors.Is(err, wire.ErrInvalidTopicName), errors.Is(err, managedledger.ErrInvalidPosition):
		return fmt.Errorf("%w: %w", admin.ErrBadRequest, err)
	}
	return err
}

func parse(topic string) (TopicName, error) {
	n, err := ParseTopicName(topic)
	return n, adminErr(err)
}

// CreateTopic implements admin.Broker.
func (a AdminAPI) CreateTopic(ctx context.Context, topic string, partitions int) error {
	n, err := parse(topic)
	if err != nil {
		return err
	}
	return adminErr(a.s.CreateTopic(ctx, n, partitions))
}

// DeleteTopic implements admin.Broker.
func (a AdminAPI) DeleteTopic(ctx context.Context, topic string, force bool) error {
	n, err := parse(topic)
	if err != nil {
		return err
	}
	return adminErr(a.s.DeleteTopic(ctx, n, force))
}

// ListTopics implements admin.Broker.
func (a AdminAPI) ListTopics(ctx context.Context, namespace, domain string) ([]string, error) {
	mode := pb.CommandGetTopicsOfNamespace_PERSISTENT
	if domain == domainNonPersistent {
		mode = pb.CommandGetTopicsOfNamespace_NON_PERSISTENT
	}
	out, err := a.s.ListTopics(ctx, namespace, mode)
	return out, adminErr(err)
}

// TopicStats implements admin.Broker.
func (a AdminAPI) TopicStats(ctx context.Context, topic string) (admin.TopicStats, error) {
	t, err := a.loaded(ctx, topic) // load it so its stored subscriptions show
	if err != nil {
		return admin.NewTopicStats(), err
	}
	return a.statsOf(ctx, t)
}

// LoadedTopicStats implements admin.Broker: stats of the loaded topics only (a scrape must
// not load topics back).
func (a AdminAPI) LoadedTopicStats(ctx context.Context) map[string]admin.TopicStats {
	out := map[string]admin.TopicStats{}
	for _, t := range a.s.loadedTopics() {
		if st, err := a.statsOf(ctx, t); err == nil {
			out[t.full] = st
		}
	}
	return out
}

func (a AdminAPI) statsOf(ctx context.Context, t *topic) (admin.TopicStats, error) {
	out := admin.NewTopicStats()
	st, err := a.s.TopicStats(ctx, t.name)
	if err != nil {
		return out, adminErr(err)
	}
	out.StorageSize = st.StorageSize
	out.MsgInCounter, out.BytesInCounter = t.counters.msgsIn.Load(), t.counters.bytesIn.Load()
	out.MsgOutCounter, out.BytesOutCounter = t.counters.msgsOut.Load(), t.counters.bytesOut.Load()
	if out.MsgInCounter > 0 {
		out.AverageMsgSize = float64(out.BytesInCounter) / float64(out.MsgInCounter)
	}
	// Access mode and client version are not in the broker's stats: read them from the
	// producers themselves (tools read publishers[].clientVersion).
	t.mu.Lock()
	for _, p := range st.Publishers {
		ps := admin.PublisherStats{AccessMode: "Shared", ProducerID: p.ProducerID,
			ProducerName: p.ProducerName, Address: p.Address, Metadata: map[string]string{}}
		if live := t.producers[p.ProducerName]; live != nil {
			ps.AccessMode = accessModeName(live.mode)
			ps.ClientVersion = live.c.clientVersion
		}
		out.Publishers = append(out.Publishers, ps)
	}
	t.mu.Unlock()
	for name, sub := range st.Subscriptions {
		ss := admin.SubscriptionStats{Type: sub.Type, MsgBacklog: sub.MsgBacklog, MsgBacklogNoDelay: sub.MsgBacklog,
			IsDurable: sub.IsDurable, Consumers: []admin.ConsumerStats{}}
		for _, c := range sub.Consumers {
			ss.UnackedMessages += int64(c.UnackedMessages)
			ss.Consumers = append(ss.Consumers, admin.ConsumerStats{ConsumerName: c.ConsumerName, Address: c.Address,
				AvailablePermits: c.AvailablePermits, UnackedMessages: c.UnackedMessages, Metadata: map[string]string{}})
		}
		out.Subscriptions[name] = ss
	}
	// Durable subscriptions without consumers live only as cursors.
	if l, ok := t.log.(mlLog); ok {
		for _, c := range l.ml.Cursors() {
			if !c.IsDurable() || isSystemCursor(c.Name()) {
				continue
			}
			ss, ok := out.Subscriptions[c.Name()]
			if !ok {
				ss = admin.SubscriptionStats{Type: "Exclusive", IsDurable: true, Consumers: []admin.ConsumerStats{}}
			}
			ss.MsgBacklog = c.Backlog()
			ss.MsgBacklogNoDelay = ss.MsgBacklog
			ss.BacklogSize = c.BacklogSize()
			out.Subscriptions[c.Name()] = ss
			out.BacklogSize = max(out.BacklogSize, ss.BacklogSize)
		}
	}
	return out, nil
}

// accessModeName is Pulsar's JSON name of a producer access mode.
func accessModeName(m pb.ProducerAccessMode) string {
	switch m {
	case pb.ProducerAccessMode_Exclusive:
		return "Exclusive"
	case pb.ProducerAccessMode_ExclusiveWithFencing:
		return "ExclusiveWithFencing"
	case pb.ProducerAccessMode_WaitForExclusive:
		return "WaitForExclusive"
	}
	return "Shared"
}

// MessageIDAt implements admin.Broker: the first entry published at or after t.
func (a AdminAPI) MessageIDAt(ctx context.Context, topic string, at time.Time) (admin.MessageID, error) {
	t, ml, err := a.ledgerOf(ctx, topic)
	if err != nil {
		return admin.MessageID{}, err
	}
	p, err := ml.FindByPublishTime(ctx, at, entryPublishTime)
	if err != nil {
		return admin.MessageID{}, adminErr(mlErr(err))
	}
	return a.messageID(t, fromML(p)), nil
}

// loaded returns the topic, loading it (never creating it).
func (a AdminAPI) loaded(ctx context.Context, topic string) (*topic, error) {
	return a.load(ctx, topic, false)
}

// load returns the topic, loading it; create allows auto-creation (as a subscribe would).
func (a AdminAPI) load(ctx context.Context, topic string, create bool) (*topic, error) {
	n, err := parse(topic)
	if err != nil {
		return nil, err
	}
	t, err := a.s.getTopic(ctx, n, create)
	return t, adminErr(err)
}

// ledgerOf returns the managed ledger of a loaded persistent topic.
func (a AdminAPI) ledgerOf(ctx context.Context, topic string) (*topic, *managedledger.ManagedLedger, error) {
	return a.ledgerOfCreate(ctx, topic, false)
}

func (a AdminAPI) ledgerOfCreate(ctx context.Context, topic string, create bool) (*topic, *managedledger.ManagedLedger, error) {
	t, err := a.load(ctx, topic, create)
	if err != nil {
		return nil, nil, err
	}
	l, ok := t.log.(mlLog)
	if !ok {
		return nil, nil, fmt.Errorf("%w: %s is not a persistent topic", admin.ErrNotAllowed, topic)
	}
	return t, l.ml, nil
}

// InternalStats implements admin.Broker.
func (a AdminAPI) InternalStats(ctx context.Context, topic string) (any, error) {
	_, ml, err := a.ledgerOf(ctx, topic)
	if err != nil {
		return nil, err
	}
	st := ml.InternalStats()
	if st.Ledgers == nil {
		st.Ledgers = []managedledger.LedgerStats{}
	}
	return st, nil
}

func (a AdminAPI) messageID(t *topic, p position) admin.MessageID {
	return admin.MessageID{LedgerID: p.ledger, EntryID: p.entry, PartitionIndex: t.name.Partition}
}

// LastMessageID implements admin.Broker.
func (a AdminAPI) LastMessageID(ctx context.Context, topic string) (admin.MessageID, error) {
	t, err := a.loaded(ctx, topic)
	if err != nil {
		return admin.MessageID{}, err
	}
	p, bi, err := t.lastMessageID(ctx)
	if err != nil {
		return admin.MessageID{}, adminErr(err)
	}
	id := a.messageID(t, p)
	if bi > 0 {
		id.BatchIndex = int(bi)
	}
	return id, nil
}

// Terminate implements admin.Broker (Server.TerminateTopic: producers are disconnected
// for good, consumers drain).
func (a AdminAPI) Terminate(ctx context.Context, topic string) (admin.MessageID, error) {
	n, err := parse(topic)
	if err != nil {
		return admin.MessageID{}, err
	}
	l, e, err := a.s.TerminateTopic(ctx, n)
	if err != nil {
		return admin.MessageID{}, adminErr(err)
	}
	return admin.MessageID{LedgerID: l, EntryID: e, PartitionIndex: n.Partition}, nil
}

// Unload implements admin.Broker.
func (a AdminAPI) Unload(ctx context.Context, topic string) error {
	n, err := parse(topic)
	if err != nil {
		return err
	}
	return adminErr(a.s.UnloadTopic(ctx, n))
}

// Subscriptions implements admin.Broker: the durable cursors and the subscriptions
// currently attached (readers included, as Pulsar lists them).
func (a AdminAPI) Subscriptions(ctx context.Context, topic string) ([]string, error) {
	t, err := a.loaded(ctx, topic)
	if err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	out := []string{}
	add := func(name string) {
		if !seen[name] {
			seen[name] = true
			out = append(out, name)
		}
	}
	if l, ok := t.log.(mlLog); ok {
		for _, c := range l.ml.Cursors() {
			if c.IsDurable() && !isSystemCursor(c.Name()) {
				add(c.Name())
			}
		}
	}
	t.mu.Lock()
	for name := range t.subs {
		add(name)
	}
	t.mu.Unlock()
	return out, nil
}

// CreateSubscription implements admin.Broker with Server.CreateSubscription at the
// earliest or latest message, then, for any other position, a reset to it. Like a
// subscribe, it creates the topic when auto-creation allows.
func (a AdminAPI) CreateSubscription(ctx context.Context, topic, sub string, at admin.MessageID) error {
	t, ml, err := a.ledgerOfCreate(ctx, topic, true)
	if err != nil {
		return err
	}
	if _, ok := ml.Cursor(sub); ok { // stored but not attached since the topic loaded
		return fmt.Errorf("%w: subscription %s already exists on %s", resources.ErrAlreadyExists, sub, t.full)
	}
	p := managedledger.Position{LedgerID: at.LedgerID, EntryID: at.EntryID}
	if err := a.s.CreateSubscription(ctx, t.name, sub, p == managedledger.Earliest); err != nil {
		return adminErr(err)
	}
	if p != managedledger.Earliest && p != managedledger.Latest {
		return adminErr(a.s.ResetSubscription(ctx, t.name, sub, at.LedgerID, at.EntryID, time.Time{}))
	}
	return nil
}

// DeleteSubscription implements admin.Broker (Server.DeleteSubscription).
func (a AdminAPI) DeleteSubscription(ctx context.Context, topic, sub string, force bool) error {
	t, _, _, err := a.cursorOf(ctx, topic, sub) // a missing subscription is 404
	if err != nil {
		return err
	}
	return adminErr(a.s.DeleteSubscription(ctx, t.name, sub, force))
}

// cursorOf returns the durable cursor of sub.
func (a AdminAPI) cursorOf(ctx context.Context, topic, sub string) (*topic, *managedledger.ManagedLedger, *managedledger.Cursor, error) {
	t, ml, err := a.ledgerOf(ctx, topic)
	if err != nil {
		return nil, nil, nil, err
	}
	c, ok := ml.Cursor(sub)
	if !ok {
		return nil, nil, nil, fmt.Errorf("%w: subscription %s on %s", resources.ErrNotFound, sub, t.full)
	}
	return t, ml, c, nil
}

// Skip implements admin.Broker: n < 0 is Server.ClearBacklog; otherwise the next n
// unacknowledged entries are acknowledged on the cursor (dispatch skips acknowledged
// entries by itself, so the subscription needs no reset).
func (a AdminAPI) Skip(ctx context.Context, topic, sub string, n int64) error {
	t, _, c, err := a.cursorOf(ctx, topic, sub)
	if err != nil {
		return err
	}
	if n < 0 {
		return adminErr(a.s.ClearBacklog(ctx, t.name, sub))
	}
	return adminErr(mlErr(c.Skip(n)))
}

// ExpireMessages implements admin.Broker: everything before the first entry published at
// or after now-age is acknowledged.
func (a AdminAPI) ExpireMessages(ctx context.Context, topic, sub string, age time.Duration) error {
	_, ml, c, err := a.cursorOf(ctx, topic, sub)
	if err != nil {
		return err
	}
	p, err := ml.FindByPublishTime(ctx, time.Now().Add(-age), entryPublishTime)
	if err != nil {
		return adminErr(mlErr(err))
	}
	// (L, e-1) is the position just before p, also for e = 0 (nothing of L consumed).
	return adminErr(mlErr(c.MarkDelete(managedledger.Position{LedgerID: p.LedgerID, EntryID: p.EntryID - 1})))
}

// ResetCursor implements admin.Broker with Server.ResetSubscription: consumers are
// disconnected and the subscription's dispatch state is dropped with the cursor move.
func (a AdminAPI) ResetCursor(ctx context.Context, topic, sub string, id *admin.MessageID, at time.Time) error {
	t, _, _, err := a.cursorOf(ctx, topic, sub)
	if err != nil {
		return err
	}
	var l, e int64
	if id != nil {
		l, e, at = id.LedgerID, id.EntryID, time.Time{}
	}
	return adminErr(a.s.ResetSubscription(ctx, t.name, sub, l, e, at))
}

// Peek implements admin.Broker.
func (a AdminAPI) Peek(ctx context.Context, topic, sub string, k int) (admin.RawMessage, error) {
	t, ml, c, err := a.cursorOf(ctx, topic, sub)
	if err != nil {
		return admin.RawMessage{}, err
	}
	r, err := ml.NewNonDurableCursor(c.MarkDeletePosition(), false)
	if err != nil {
		return admin.RawMessage{}, adminErr(mlErr(err))
	}
	defer func() { _ = r.Close(ctx) }()
	for seen := 0; ; {
		if !r.HasMoreEntries() {
			return admin.RawMessage{}, fmt.Errorf("%w: no message at position %d of %s", resources.ErrNotFound, k, sub)
		}
		es, err := r.ReadEntries(ctx, min(k-seen, 100), 64<<20)
		if err != nil {
			return admin.RawMessage{}, adminErr(mlErr(err))
		}
		for _, e := range es {
			if c.IsAcknowledged(e.Position) {
				continue
			}
			if seen++; seen == k {
				return rawMessage(t, fromML(e.Position), e.Data)
			}
		}
	}
}

// ExamineMessage implements admin.Broker: a reader from the oldest stored entry skips to
// the wanted one (Skip jumps by counting, it does not read what it skips).
func (a AdminAPI) ExamineMessage(ctx context.Context, topic string, latest bool, pos int64) (admin.RawMessage, error) {
	t, ml, err := a.ledgerOf(ctx, topic)
	if err != nil {
		return admin.RawMessage{}, err
	}
	n := ml.NumberOfEntries()
	if pos < 1 || pos > n {
		return admin.RawMessage{}, fmt.Errorf("%w: message position %d of %s (%d stored)", resources.ErrNotFound, pos, t.full, n)
	}
	skip := pos - 1
	if latest {
		skip = n - pos
	}
	r, err := ml.NewNonDurableCursor(managedledger.Earliest, false)
	if err != nil {
		return admin.RawMessage{}, adminErr(mlErr(err))
	}
	defer func() { _ = r.Close(ctx) }()
	if err := r.Skip(skip); err != nil {
		return admin.RawMessage{}, adminErr(mlErr(err))
	}
	es, err := r.ReadEntries(ctx, 1, 64<<20)
	if err != nil {
		return admin.RawMessage{}, adminErr(mlErr(err))
	}
	if len(es) == 0 {
		return admin.RawMessage{}, fmt.Errorf("%w: message position %d of %s", resources.ErrNotFound, pos, t.full)
	}
	return rawMessage(t, fromML(es[0].Position), es[0].Data)
}

// Message implements admin.Broker.
func (a AdminAPI) Message(ctx context.Context, topic string, id admin.MessageID) (admin.RawMessage, error) {
	t, err := a.loaded(ctx, topic)
	if err != nil {
		return admin.RawMessage{}, err
	}
	if t.log == nil {
		return admin.RawMessage{}, fmt.Errorf("%w: %s is not a persistent topic", admin.ErrNotAllowed, topic)
	}
	p := position{id.LedgerID, id.EntryID}
	e, err := t.log.readAt(ctx, p)
	if err != nil {
		return admin.RawMessage{}, fmt.Errorf("%w: message %s of %s: %w", resources.ErrNotFound, p, topic, err)
	}
	return rawMessage(t, p, e.data)
}

// rawMessage splits a stored entry into metadata and payload (as stored: a batch stays a
// batch body, compressed stays compressed; pulsaradmin splits batches itself).
func rawMessage(t *topic, p position, data []byte) (admin.RawMessage, error) {
	e, err := wire.ParseEntry(data, false)
	if err != nil {
		return admin.RawMessage{}, fmt.Errorf("entry %s of %s: %w", p, t.full, err)
	}
	md, err := wire.ParseMetadata(e.Metadata)
	if err != nil {
		return admin.RawMessage{}, fmt.Errorf("entry %s of %s: %w", p, t.full, err)
	}
	m := admin.RawMessage{ID: admin.MessageID{LedgerID: p.ledger, EntryID: p.entry, PartitionIndex: t.name.Partition},
		PublishTime: int64(md.GetPublishTime()), Properties: map[string]string{}, Payload: e.Payload}
	if md.NumMessagesInBatch != nil {
		m.NumBatch = int(md.GetNumMessagesInBatch())
	}
	for _, kv := range md.GetProperties() {
		m.Properties[kv.GetKey()] = kv.GetValue()
	}
	return m, nil
}

// ServiceURL implements admin.Broker.
func (a AdminAPI) ServiceURL() string { return a.s.ServiceURL() }
