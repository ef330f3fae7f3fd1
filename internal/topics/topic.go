package topics

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"

	"github.com/magnetar-io/magnetar/internal/txn"
	"github.com/magnetar-io/magnetar/internal/wire"
)

// Topic is a loaded topic: its log (persistent topics), producers and subscriptions.
type Topic struct {
	s    *Service
	name Name
	full string
	log  *topicLog // nil for non-persistent topics
	logg *slog.Logger

	// created is when the topic was recorded (Unix ms), for stats.
	created  int64
	counters topicCounters
	rates    rateMeter // pulsar_rate_* and pulsar_throughput_* (metrics_rates.go)

	// dedup is the deduplication state (dedup.go), nil for non-persistent topics; pol the
	// policies in effect (policies.go).
	dedup *dedup
	pol   topicPolicyState
	// txn is the topic's transaction state (txn.go), nil without transactions.
	txn *txn.TopicState
	// cmp is the topic's compaction state (compaction.go).
	cmp compaction

	mu        sync.Mutex
	producers map[string]*Producer // by producer name
	subs      map[string]*Subscription
	exclusive *Producer   // holder of exclusive access, if any
	waiters   []*Producer // WaitForExclusive producers, in arrival order
	epoch     uint64      // topic epoch, bumped by each exclusive grant
	closed    bool        // no new producers or consumers
	// resourcesClosed: dispatchers stopped and the log closed.
	resourcesClosed bool

	// Non-persistent topics number their messages (0, n) so consumers see distinct ids.
	npNext int64
	// lastBatchIndex caches batch_index of the newest entry for GET_LAST_MESSAGE_ID
	// (-2: unknown, read it from the log).
	lastPos        Position
	lastBatchIndex int32
}

func newTopic(s *Service, name Name) *Topic {
	return &Topic{
		s:              s,
		name:           name,
		full:           name.String(),
		logg:           s.log.With("topic", name.String()),
		producers:      map[string]*Producer{},
		subs:           map[string]*Subscription{},
		lastPos:        Position{LedgerID: -1, EntryID: -1},
		lastBatchIndex: -2,
	}
}

// Name is the topic's name.
func (t *Topic) Name() Name { return t.name }

// Persistent tells whether the topic stores its messages (non-persistent topics hand them
// to the consumers connected at the time).
func (t *Topic) Persistent() bool { return t.log != nil }

// Terminated tells whether the topic was terminated: it takes no more messages.
func (t *Topic) Terminated() bool { return t.log != nil && t.log.terminated() }

// LastConfirmed is the position of the newest stored entry, entry -1 when there is none
// (or the topic is not persistent).
func (t *Topic) LastConfirmed() Position {
	if t.log == nil {
		return Position{LedgerID: -1, EntryID: -1}
	}
	return t.log.lastConfirmed()
}

// ErrProducerWaiting is AddProducer's answer to a WaitForExclusive producer that must
// wait: the producer is returned, not ready; its client's Granted is called when it gets
// exclusive access (or Refuse when it never will).
var ErrProducerWaiting = errors.New("topics: producer waits for exclusive access")

// AddProducer admits a producer (termination, max producers, backlog quota), registers or
// checks its schema, and registers it under its name with the access modes of addProducer.
// With ErrProducerWaiting the producer is returned too, not ready.
func (t *Topic) AddProducer(ctx context.Context, spec ProducerSpec, client ProducerClient) (*Producer, error) {
	if err := t.s.authorize(ctx, ActionProduce, t.name); err != nil {
		return nil, err
	}
	if t.Terminated() {
		return nil, fmt.Errorf("%w: %s", wire.ErrTopicTerminated, t.full)
	}
	if err := t.admitProducer(); err != nil {
		return nil, err
	}
	version, err := t.s.producerSchema(ctx, t.name, spec.Schema)
	if err != nil {
		return nil, err
	}
	if err := t.initialSubscription(ctx, spec.InitialSubscription); err != nil {
		return nil, err
	}
	if spec.Name == "" {
		spec.Name = t.s.NewProducerName()
	}
	p := &Producer{t: t, id: spec.ID, name: spec.Name, epoch: spec.Epoch, mode: spec.Mode, client: client, schemaVersion: version,
		principal: PrincipalFrom(ctx), metadata: spec.Metadata}
	if err := t.addProducer(p); err != nil {
		if errors.Is(err, ErrProducerWaiting) {
			return p, err
		}
		return nil, err
	}
	return p, nil
}

// initialSubscription creates a producer's initial subscription (ProducerSpec) at the
// earliest message unless it exists. It needs the consume permission on the subscription,
// as Pulsar asks of a producer that names one; a non-persistent topic has no cursors to
// create, so the name is ignored there as Pulsar does.
func (t *Topic) initialSubscription(ctx context.Context, sub string) error {
	if sub == "" || t.log == nil {
		return nil
	}
	if !t.autoSubscriptionAllowed() {
		if _, ok := t.log.ml.Cursor(sub); ok {
			return nil
		}
		return fmt.Errorf("%w: could not create the initial subscription %s: allowAutoSubscriptionCreation is false", wire.ErrNotAllowed, sub)
	}
	err := t.s.CreateSubscription(ctx, t.name, sub, Earliest)
	if errors.Is(err, ErrSubscriptionExists) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("initial subscription %s: %w", sub, err)
	}
	return nil
}

// addProducer registers p under its name, applying the access modes:
//   - a name already connected is ProducerBusy, unless the newcomer is the same producer
//     reconnecting with a higher epoch (its old connection is dead but not yet noticed),
//     which replaces it;
//   - Shared while an exclusive producer holds the topic: ProducerBusy;
//   - Exclusive while any other producer is connected: ProducerFenced;
//   - ExclusiveWithFencing: the other producers are disconnected;
//   - WaitForExclusive while others are connected: queued (ErrProducerWaiting).
//
// Exclusive modes bump the topic epoch (Producer.TopicEpoch).
func (t *Topic) addProducer(p *Producer) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return fmt.Errorf("%w: topic %s is closing", wire.ErrServiceNotReady, t.full)
	}
	if old, ok := t.producers[p.name]; ok {
		if p.epoch <= old.epoch {
			return fmt.Errorf("%w: producer %q is already connected to %s", wire.ErrProducerBusy, p.name, t.full)
		}
		delete(t.producers, old.name)
		if t.exclusive == old {
			t.exclusive = nil
		}
		old.client.Disconnect()
	}
	switch p.mode {
	case SharedAccess:
		if t.exclusive != nil {
			return fmt.Errorf("%w: topic %s has an exclusive producer", wire.ErrProducerBusy, t.full)
		}
	case ExclusiveAccess:
		if len(t.producers) > 0 {
			return fmt.Errorf("%w: topic %s already has producers; exclusive access refused", wire.ErrProducerFenced, t.full)
		}
	case ExclusiveWithFencing:
		for _, other := range t.producers {
			delete(t.producers, other.name)
			other.client.Disconnect()
		}
		t.exclusive = nil
	case WaitForExclusive:
		if len(t.producers) > 0 {
			t.waiters = append(t.waiters, p)
			return ErrProducerWaiting
		}
	default:
		return fmt.Errorf("%w: unknown producer access mode %d", wire.ErrNotAllowed, p.mode)
	}
	t.attachLocked(p)
	return nil
}

func (t *Topic) attachLocked(p *Producer) {
	if p.mode != SharedAccess {
		t.exclusive = p
		t.epoch++
	}
	p.topicEpoch.Store(t.epoch)
	p.ready.Store(true)
	t.producers[p.name] = p
}

// removeProducer detaches p (or drops it from the wait queue). When the exclusive holder
// leaves, the first waiting producer still connected gets the topic.
func (t *Topic) removeProducer(p *Producer) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for i, w := range t.waiters {
		if w == p {
			t.waiters = append(t.waiters[:i], t.waiters[i+1:]...)
			return
		}
	}
	if t.producers[p.name] != p {
		return
	}
	delete(t.producers, p.name)
	if t.exclusive == p {
		t.exclusive = nil
	}
	for len(t.waiters) > 0 && len(t.producers) == 0 {
		w := t.waiters[0]
		t.waiters = t.waiters[1:]
		if !w.client.Alive() {
			continue
		}
		t.attachLocked(w)
		w.client.Granted(w)
	}
}

// disconnectProducers detaches every producer and tells its client (they may come back
// and be admitted again, or not).
func (t *Topic) disconnectProducers() {
	t.mu.Lock()
	producers := make([]*Producer, 0, len(t.producers))
	for _, p := range t.producers {
		producers = append(producers, p)
	}
	t.mu.Unlock()
	for _, p := range producers {
		t.removeProducer(p)
		p.client.Disconnect()
	}
}

// publish stores one entry (persistent) or hands it to connected consumers
// (non-persistent) and calls done with its position and index (index.go; -1 when not
// persistent).
func (t *Topic) publish(data, buf []byte, meta EntryMeta, done func(Position, int64, error)) {
	if t.log == nil {
		t.mu.Lock()
		pos := Position{LedgerID: 0, EntryID: t.npNext}
		t.npNext++
		subs := make([]*Subscription, 0, len(t.subs))
		for _, s := range t.subs {
			subs = append(subs, s)
		}
		t.lastPos = pos
		t.lastBatchIndex = -2
		t.mu.Unlock()
		for _, s := range subs {
			s.dispatchNonPersistent(Entry{Position: pos, Data: data, Meta: meta})
		}
		done(pos, -1, nil)
		return
	}
	batchIndex := lastBatchIndex(meta)
	err := t.log.append(data, buf, meta, func(pos Position, index int64, err error) {
		if err == nil {
			t.mu.Lock()
			if t.lastPos.Less(pos) {
				t.lastPos = pos
				t.lastBatchIndex = batchIndex
			}
			t.mu.Unlock()
		}
		if errors.Is(err, wire.ErrServiceNotReady) {
			// The log was fenced by a newer owner or closed under us: this topic object is
			// dead. Unload it so clients reconnect and the next use loads it afresh.
			go t.unloadAfterFailure(err)
		}
		done(pos, index, err)
	})
	if err != nil {
		if errors.Is(err, wire.ErrServiceNotReady) {
			go t.unloadAfterFailure(err)
		}
		done(Position{}, -1, err)
	}
}

func (t *Topic) unloadAfterFailure(cause error) {
	t.logg.Warn("topic storage failed; unloading the topic", "err", cause)
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	if err := t.s.unload(ctx, t); err != nil {
		t.logg.Warn("unloading after a storage failure", "err", err)
	}
}

// lastBatchIndex is the batch index of the last message of an entry (-1 if it is not a
// batch), from the metadata published with it, so the append callback does not parse the
// entry a second time.
func lastBatchIndex(m EntryMeta) int32 {
	if !m.Batch {
		return -1
	}
	return int32(msgCount(m) - 1)
}

// LastMessageID returns the id of the newest message: its entry's position and the batch
// index of its last message (-1 when not a batch); entry -1 when the topic is empty.
func (t *Topic) LastMessageID(ctx context.Context) (Position, int32, error) {
	if t.log == nil {
		t.mu.Lock()
		defer t.mu.Unlock()
		return t.lastPos, -1, nil
	}
	if p, bi, ok, err := t.txnLastMessageID(ctx); ok { // txn.go
		return p, bi, err
	}
	lc := t.log.lastConfirmed()
	t.mu.Lock()
	if t.lastPos == lc && t.lastBatchIndex != -2 {
		bi := t.lastBatchIndex
		t.mu.Unlock()
		return lc, bi, nil
	}
	t.mu.Unlock()
	if lc.EntryID < 0 {
		return lc, -1, nil
	}
	e, err := t.log.readAt(ctx, lc)
	if err != nil {
		return Position{}, 0, fmt.Errorf("%w: read last entry of %s: %w", wire.ErrPersistence, t.full, err)
	}
	bi := lastBatchIndex(metaOf(e))
	t.mu.Lock()
	if !lc.Less(t.lastPos) {
		t.lastPos, t.lastBatchIndex = lc, bi
	}
	t.mu.Unlock()
	return lc, bi, nil
}

// close closes the subscriptions and the log; producers and consumers are expected to be
// gone (their connections closed) already.
func (t *Topic) close(ctx context.Context) error {
	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		return nil
	}
	t.closed = true
	t.mu.Unlock()
	return t.closeResources(ctx)
}

// closeResources stops the subscriptions' dispatchers and closes the log once.
func (t *Topic) closeResources(ctx context.Context) error {
	t.mu.Lock()
	if t.resourcesClosed {
		t.mu.Unlock()
		return nil
	}
	t.resourcesClosed = true
	subs := make([]*Subscription, 0, len(t.subs))
	for _, s := range t.subs {
		subs = append(subs, s)
	}
	t.mu.Unlock()
	for _, s := range subs {
		s.stop()
	}
	t.closeTxn(ctx) // txn.go
	t.closeCompaction()
	t.dedup.close()
	if t.log != nil {
		if err := t.log.close(ctx); err != nil {
			return fmt.Errorf("topics: close topic %s: %w", t.full, err)
		}
	}
	return nil
}

// WaitingProducers is the number of WaitForExclusive producers queued for the topic.
func (t *Topic) WaitingProducers() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.waiters)
}
