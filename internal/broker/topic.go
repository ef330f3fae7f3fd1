package broker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"

	"github.com/magnetar-io/magnetar/internal/wire"
	"github.com/magnetar-io/magnetar/internal/wire/pb"
)

// topic is a loaded topic: its log (persistent topics), producers and subscriptions.
type topic struct {
	s    *Server
	name TopicName
	full string
	log  topicLog // nil for non-persistent topics
	logg *slog.Logger

	counters topicCounters
	rates    rateMeter // pulsar_rate_* and pulsar_throughput_* (metrics_rates.go)

	// dedup is the deduplication state (dedup.go), nil for non-persistent topics; pol the
	// policies in effect (policies.go).
	dedup *dedup
	pol   topicPolicyState

	mu        sync.Mutex
	producers map[string]*producer // by producer name
	subs      map[string]*subscription
	exclusive *producer   // holder of exclusive access, if any
	waiters   []*producer // WaitForExclusive producers, in arrival order
	epoch     uint64      // topic epoch, bumped by each exclusive grant
	closed    bool        // no new producers or consumers
	// resourcesClosed: dispatchers stopped and the log closed.
	resourcesClosed bool

	// Non-persistent topics number their messages (0, n) so consumers see distinct ids.
	npNext int64
	// lastBatchIndex caches batch_index of the newest entry for GET_LAST_MESSAGE_ID
	// (-2: unknown, read it from the log).
	lastPos        position
	lastBatchIndex int32
}

func newTopic(s *Server, name TopicName) *topic {
	return &topic{
		s:              s,
		name:           name,
		full:           name.String(),
		logg:           s.log.With("topic", name.String()),
		producers:      map[string]*producer{},
		subs:           map[string]*subscription{},
		lastPos:        position{-1, -1},
		lastBatchIndex: -2,
	}
}

// errProducerWaiting is addProducer's answer to a WaitForExclusive producer that must
// wait: the handler sends PRODUCER_SUCCESS{producer_ready: false} and the topic sends the
// final PRODUCER_SUCCESS when the producer gets exclusive access.
var errProducerWaiting = errors.New("broker: producer waits for exclusive access")

// addProducer registers p under its name, applying the access modes:
//   - a name already connected is ProducerBusy, unless the newcomer is the same producer
//     reconnecting with a higher epoch (its old connection is dead but not yet noticed),
//     which replaces it;
//   - Shared while an exclusive producer holds the topic: ProducerBusy;
//   - Exclusive while any other producer is connected: ProducerFenced;
//   - ExclusiveWithFencing: the other producers are disconnected;
//   - WaitForExclusive while others are connected: queued (errProducerWaiting).
//
// Exclusive modes bump the topic epoch, returned in PRODUCER_SUCCESS.
func (t *topic) addProducer(p *producer) error {
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
		old.c.closeProducerFromBroker(old)
	}
	switch p.mode {
	case pb.ProducerAccessMode_Shared:
		if t.exclusive != nil {
			return fmt.Errorf("%w: topic %s has an exclusive producer", wire.ErrProducerBusy, t.full)
		}
	case pb.ProducerAccessMode_Exclusive:
		if len(t.producers) > 0 {
			return fmt.Errorf("%w: topic %s already has producers; exclusive access refused", wire.ErrProducerFenced, t.full)
		}
	case pb.ProducerAccessMode_ExclusiveWithFencing:
		for _, other := range t.producers {
			delete(t.producers, other.name)
			other.c.closeProducerFromBroker(other)
		}
		t.exclusive = nil
	case pb.ProducerAccessMode_WaitForExclusive:
		if len(t.producers) > 0 {
			t.waiters = append(t.waiters, p)
			return errProducerWaiting
		}
	default:
		return fmt.Errorf("%w: unknown producer access mode %d", wire.ErrNotAllowed, p.mode)
	}
	t.attachLocked(p)
	return nil
}

func (t *topic) attachLocked(p *producer) {
	if p.mode != pb.ProducerAccessMode_Shared {
		t.exclusive = p
		t.epoch++
	}
	p.topicEpoch = t.epoch
	t.producers[p.name] = p
}

// removeProducer detaches p (or drops it from the wait queue). When the exclusive holder
// leaves, the first waiting producer still connected gets the topic.
func (t *topic) removeProducer(p *producer) {
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
		if w.c.isClosed() {
			continue
		}
		t.attachLocked(w)
		w.c.producerReady(w)
	}
}

// publish stores one entry (persistent) or hands it to connected consumers
// (non-persistent) and calls done with its position. count is its message count and
// batchIndex the batch index of its last message (-1 if it is not a batch).
func (t *topic) publish(data []byte, count int, batchIndex int32, done func(position, error)) {
	if t.log == nil {
		t.mu.Lock()
		pos := position{0, t.npNext}
		t.npNext++
		subs := make([]*subscription, 0, len(t.subs))
		for _, s := range t.subs {
			subs = append(subs, s)
		}
		t.lastPos = pos
		t.lastBatchIndex = -2
		t.mu.Unlock()
		for _, s := range subs {
			s.dispatchNonPersistent(logEntry{pos: pos, data: data}, count)
		}
		done(pos, nil)
		return
	}
	err := t.log.append(data, func(pos position, err error) {
		if err == nil {
			t.mu.Lock()
			if t.lastPos.less(pos) {
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
		done(pos, err)
	})
	if err != nil {
		if errors.Is(err, wire.ErrServiceNotReady) {
			go t.unloadAfterFailure(err)
		}
		done(position{}, err)
	}
}

func (t *topic) unloadAfterFailure(cause error) {
	t.logg.Warn("topic storage failed; unloading the topic", "err", cause)
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	if err := t.s.unload(ctx, t); err != nil {
		t.logg.Warn("unloading after a storage failure", "err", err)
	}
}

// lastBatchIndex is the batch index of the last message of an entry with metadata md (-1 if
// it is not a batch). handleSend computes it from the metadata it has already decoded, so the
// append callback does not parse the entry a second time.
func lastBatchIndex(md *pb.MessageMetadata) int32 {
	if !wire.IsBatch(md) {
		return -1
	}
	return int32(wire.MessageCount(md) - 1)
}

// batchIndexOf is lastBatchIndex of a stored entry, for an entry read back from the log.
func batchIndexOf(data []byte) int32 {
	e, err := wire.ParseEntry(data, false)
	if err != nil {
		return -1
	}
	md, err := wire.ParseMetadata(e.Metadata)
	if err != nil {
		return -1
	}
	return lastBatchIndex(md)
}

// lastMessageID returns the id of the newest message: (ledger, entry, batch index); entry
// -1 when the topic is empty.
func (t *topic) lastMessageID(ctx context.Context) (position, int32, error) {
	if t.log == nil {
		t.mu.Lock()
		defer t.mu.Unlock()
		return t.lastPos, -1, nil
	}
	lc := t.log.lastConfirmed()
	t.mu.Lock()
	if t.lastPos == lc && t.lastBatchIndex != -2 {
		bi := t.lastBatchIndex
		t.mu.Unlock()
		return lc, bi, nil
	}
	t.mu.Unlock()
	if lc.entry < 0 {
		return lc, -1, nil
	}
	e, err := t.log.readAt(ctx, lc)
	if err != nil {
		return position{}, 0, fmt.Errorf("%w: read last entry of %s: %w", wire.ErrPersistence, t.full, err)
	}
	bi := batchIndexOf(e.data)
	t.mu.Lock()
	if !lc.less(t.lastPos) {
		t.lastPos, t.lastBatchIndex = lc, bi
	}
	t.mu.Unlock()
	return lc, bi, nil
}

// close closes the subscriptions and the log; producers and consumers are expected to be
// gone (their connections closed) already.
func (t *topic) close(ctx context.Context) error {
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
func (t *topic) closeResources(ctx context.Context) error {
	t.mu.Lock()
	if t.resourcesClosed {
		t.mu.Unlock()
		return nil
	}
	t.resourcesClosed = true
	subs := make([]*subscription, 0, len(t.subs))
	for _, s := range t.subs {
		subs = append(subs, s)
	}
	t.mu.Unlock()
	for _, s := range subs {
		s.stop()
	}
	t.dedup.close()
	if t.log != nil {
		if err := t.log.close(ctx); err != nil {
			return fmt.Errorf("broker: close topic %s: %w", t.full, err)
		}
	}
	return nil
}

// messageIDData builds the protocol's MessageIdData for an entry of this topic.
func (t *topic) messageIDData(p position, batchIndex int32) *pb.MessageIdData {
	id := &pb.MessageIdData{LedgerId: u64(p.ledger), EntryId: u64(p.entry)}
	if t.name.Partition >= 0 {
		id.Partition = i32(int32(t.name.Partition))
	}
	if batchIndex >= 0 {
		id.BatchIndex = i32(batchIndex)
	}
	return id
}

func u64(v int64) *uint64 { x := uint64(v); return &x }
func i32(v int32) *int32  { return &v }
