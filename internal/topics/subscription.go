package topics

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/magnetar-io/magnetar/internal/auth"
	"github.com/magnetar-io/magnetar/internal/txn"
	"github.com/magnetar-io/magnetar/internal/wire"
)

// Consumer is one consumer of a subscription (Topic.Subscribe); its client is the front
// end's side of it.
type Consumer struct {
	client   ConsumerClient
	wr       ConsumerWritability // nil: the client is always writable
	sub      *Subscription
	id       uint64
	name     string
	priority int32
	// principal is who it consumes for, rechecked while it lives (reauth.go).
	principal auth.Principal
	metadata  map[string]string // ConsumerSpec.Metadata, for stats
	// lastFlow is when the consumer last asked for messages (Unix ms, stats'
	// lastConsumedFlowTimestamp).
	lastFlow atomic.Int64

	// Guarded by sub.mu.
	permits int // may go negative: a batch is never split
	removed bool
	unacked int         // messages dispatched and not acknowledged
	ranges  []HashRange // Key_Shared STICKY: the hash slots it takes
	// Key_Shared: entries after this position wait until it is acknowledged (keyshared_join.go).
	joinLimit  *Position
	outOfOrder bool // Key_Shared allow_out_of_order_delivery: neither ordering rule applies
	// Failover: not yet told whether it is active. The Go client registers a consumer
	// only after SUBSCRIBE's answer, so the first ACTIVE_CONSUMER_CHANGE waits for its
	// first FLOW, which comes after that.
	notifyPending bool
}

// Subscription is a named cursor on a topic and the consumers it dispatches to.
//
// Dispatch (persistent topics) is one goroutine per subscription, run: it waits until a
// consumer that may receive has permits, reads up to min(dispatcherMaxReadBatchSize,
// permits) entries from the cursor (waiting for new entries at the tail), and sends each
// to the consumer its dispatcher routes it to (dispatcher.go: one per subscription type:
// the active one for Exclusive/Failover, round-robin among consumers with permits for
// Shared, by key for Key_Shared). An entry costs its message count in permits. Entries it cannot hand
// out (permits ran out) are not kept: the cursor is moved back to them (seek) and read
// again later, so memory per subscription is bounded by one read batch. Producers never
// wait for dispatch, and a slow consumer only stops its own subscription.
//
// Every dispatched entry is in pending (position -> consumer) until acknowledged. When a
// consumer goes away, or asks for redelivery, its pending entries are dropped from pending,
// their redelivery count is bumped, and the cursor is rewound to the mark-delete position;
// re-reading skips acknowledged entries and entries still pending at other consumers, so
// exactly the released ones are delivered again. gen counts rewinds and resets: a read that
// started before one is discarded.
//
// Key_Shared routing and its held-back entries are in keyshared.go (keySharedDispatcher);
// the unacknowledged-message limits that bound pending are in canReceiveLocked.
type Subscription struct {
	t *Topic
	// msgsOut counts messages dispatched; rates turns it into pulsar_subscription_msg_rate_out.
	msgsOut atomic.Int64
	rates   rateMeter
	name    string
	durable bool
	cursor  *logCursor // nil for non-persistent topics
	log     *slog.Logger

	mu           sync.Mutex
	d            dispatcher  // what the subscription type decides (dispatcher.go)
	consumers    []*Consumer // in connection order
	pending      map[Position]pendingAck
	unacked      int // messages in pending
	redeliveries map[Position]uint32
	rewindReq    bool
	stalled      bool              // last round dispatched nothing although consumers had permits
	delayed      *delayedTracker   // delayed delivery (delayed.go); nil until needed
	maxRead      Position          // highest position read for dispatch (keyshared_join.go)
	slotHolds    map[int]*slotHold // Key_Shared: who holds unacked entries per slot (keyshared_join.go)
	slotFreed    bool              // a slot finished draining since the last wake-up
	avgPerEntry  float64           // messages per dispatched entry, moving average (dispatch_size.go)
	gen          uint64
	stopped      bool
	started      bool
	cancelRead   context.CancelFunc

	wake   chan struct{}
	stopCh chan struct{}

	// txn holds the subscription's transactional acknowledgements (txn.go), nil without.
	txn *txn.PendingAcks
	// cmp is the readCompacted state (compaction_read.go), nil without.
	cmp *compactedRead
}

func newSubscription(t *Topic, name string, typ SubType, durable bool, cur *logCursor) *Subscription {
	s := &Subscription{
		t: t, name: name, durable: durable, cursor: cur,
		log:          t.logg.With("subscription", name),
		maxRead:      Earliest,
		pending:      map[Position]pendingAck{},
		redeliveries: map[Position]uint32{},
		wake:         make(chan struct{}, 1),
		stopCh:       make(chan struct{}),
	}
	s.d = s.newDispatcherLocked(typ)
	return s
}

func (s *Subscription) poke() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// addConsumer attaches cs. Exclusive admits one consumer; a type different from that of
// the connected consumers is ConsumerBusy.
func (s *Subscription) addConsumer(cs *Consumer, typ SubType, ks *KeySharedPolicy) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped {
		return fmt.Errorf("%w: subscription %s is closing", wire.ErrServiceNotReady, s.name)
	}
	switch {
	case len(s.consumers) > 0 && typ != s.d.kind():
		return fmt.Errorf("%w: subscription %s is %s, not %s", wire.ErrConsumerBusy, s.name, s.d.kind(), typ)
	case typ != s.d.kind():
		// The first consumer decides the type. Entries the old dispatcher held back are read
		// again by a rewind.
		if len(s.d.held()) > 0 {
			s.requestRewindLocked()
		}
		s.d = s.newDispatcherLocked(typ)
	}
	if err := s.d.admit(cs, ks); err != nil {
		return err
	}
	s.consumers = append(s.consumers, cs)
	s.d.joined(cs)
	if len(s.consumers) == 1 {
		s.setCursorActive(true) // the log caches new entries for this subscription again
	}
	if s.cursor != nil && !s.started {
		s.started = true
		go s.run()
	}
	return nil
}

// removeConsumer detaches cs and releases its unacknowledged entries for redelivery. A
// non-durable subscription (a reader) ends with its last consumer.
func (s *Subscription) removeConsumer(cs *Consumer) { s.detach(cs, false) }

// detach is removeConsumer; with keep a non-durable subscription outlives its last
// consumer, for a seek (Consumer.Seek), whose consumers come back to the reset position.
func (s *Subscription) detach(cs *Consumer, keep bool) {
	s.mu.Lock()
	if cs.removed {
		s.mu.Unlock()
		return
	}
	cs.removed = true
	for i, x := range s.consumers {
		if x == cs {
			s.consumers = append(s.consumers[:i], s.consumers[i+1:]...)
			break
		}
	}
	s.releaseLocked(cs, nil)
	s.d.left(cs)
	last := len(s.consumers) == 0
	if last {
		s.setCursorActive(false) // nobody reads: stop keeping entries in the cache for it
	}
	s.mu.Unlock()
	if last && !s.durable && !keep {
		s.t.removeSubscription(s)
		s.stop()
	}
}

// releaseLocked drops cs's pending entries (only those in only, if non-nil) so they are
// delivered again, and schedules the rewind that re-reads them.
func (s *Subscription) releaseLocked(cs *Consumer, only map[Position]bool) {
	n := 0
	for p, pa := range s.pending {
		if pa.c == cs && (only == nil || only[p]) {
			s.dropPendingLocked(p)
			s.redeliveries[p]++
			n++
		}
	}
	if n > 0 {
		s.requestRewindLocked()
	}
}

func (s *Subscription) requestRewindLocked() {
	s.rewindReq = true
	s.gen++
	if s.cancelRead != nil {
		s.cancelRead()
	}
	s.poke()
}

// flow adds permits to cs.
func (s *Subscription) flow(cs *Consumer, n uint32) {
	s.mu.Lock()
	cs.permits += int(n)
	s.d.flowed(cs)
	s.mu.Unlock()
	s.poke()
}

// permitsLocked is the number of messages the subscription may dispatch now.
func (s *Subscription) permitsLocked() int { return s.d.permits() }

// run is the dispatcher of a persistent subscription (see the type comment).
func (s *Subscription) run() {
	backoff := 10 * time.Millisecond
	s.mu.Lock()
	defer s.mu.Unlock()
	for {
		for !s.stopped && s.permitsLocked() == 0 {
			s.waitLocked(0)
		}
		if s.stopped {
			return
		}
		if s.stalled {
			// Nothing could go out last round although consumers had permits (Key_Shared:
			// every entry was for a consumer without any). Wait for a FLOW or a consumer
			// change, or a little while for new entries.
			s.stalled = false
			s.waitLocked(50 * time.Millisecond)
			continue
		}
		if s.rewindReq {
			s.rewindReq = false
			s.d.dropHeld() // re-read by the rewind anyway
			s.cursor.rewind()
			s.rewindCompactedLocked()
		}
		sent, st := s.dispatchDueLocked(&backoff) // delayed.go
		if st == readStop {
			return
		}
		if st == readAgain {
			continue
		}
		if ps := s.d.held(); len(ps) > 0 {
			entries, st := s.readLocked(&backoff, func(ctx context.Context) ([]Entry, error) {
				return s.cursor.readPositions(ctx, ps)
			})
			if st == readStop {
				return
			}
			if st == readAgain {
				continue
			}
			sent += s.d.retryHeld(entries)
		}
		if s.delayedFullLocked() {
			if sent == 0 {
				s.waitDueLocked()
			}
			continue
		}
		if !s.d.holdFull() {
			n := s.entriesToReadLocked()
			read := func(ctx context.Context) ([]Entry, error) { return s.cursor.read(ctx, n) }
			var compacted *compactedReadResult
			if s.cmp != nil {
				read, compacted = s.compactedReader(n) // compaction_read.go
			}
			entries, st := s.readLocked(&backoff, read)
			if st == readStop {
				return
			}
			if st == readAgain {
				continue
			}
			if compacted != nil {
				s.applyCompactedReadLocked(compacted)
			}
			sent += s.dispatchLocked(entries)
		}
		if s.d.stalled(sent) {
			s.stalled = true
		}
	}
}

// waitLocked releases s.mu until a poke, the stop, or (if d > 0) d has passed.
func (s *Subscription) waitLocked(d time.Duration) {
	s.mu.Unlock()
	defer s.mu.Lock()
	var timeout <-chan time.Time
	if d > 0 {
		timeout = time.After(d)
	}
	select {
	case <-s.wake:
	case <-s.stopCh:
	case <-timeout:
	}
}

type readStatus int

const (
	readOK    readStatus = iota
	readAgain            // canceled, superseded by a rewind/reset, or failed: go round
	readStop             // the subscription stopped
)

// readLocked runs read without s.mu (reads may wait for new entries), cancelable through
// s.cancelRead, and classifies the outcome. A read that started before a rewind or reset
// (s.gen moved) is discarded.
func (s *Subscription) readLocked(backoff *time.Duration, read func(context.Context) ([]Entry, error)) ([]Entry, readStatus) {
	gen := s.gen
	ctx, cancel := s.readContext()
	s.cancelRead = cancel
	s.mu.Unlock()
	entries, err := read(ctx)
	cancel()
	s.mu.Lock()
	s.cancelRead = nil
	switch {
	case s.stopped:
		return nil, readStop
	case err != nil && ctx.Err() != nil:
		return nil, readAgain
	case errors.Is(err, wire.ErrTopicTerminated):
		// Everything of a terminated topic was read: nothing more will come unless a
		// rewind or reset (which pokes) moves the cursor back. REACHED_END_OF_TOPIC is not
		// sent: the Go client drops its connection on it.
		s.waitLocked(0)
		return nil, readAgain
	case err != nil:
		s.log.Warn("reading for dispatch failed; retrying", "err", err, "in", *backoff)
		s.waitLocked(*backoff)
		*backoff = min(2**backoff, 5*time.Second)
		return nil, readAgain
	case gen != s.gen:
		return nil, readAgain
	}
	*backoff = 10 * time.Millisecond
	return entries, readOK
}

// dispatchLocked hands entries out in order, as the dispatcher routes them, and returns how
// many it sent; see the type comment. Entries the dispatcher holds back (Key_Shared) stay
// with it; at the first entry nobody may receive, the cursor goes back to it.
func (s *Subscription) dispatchLocked(entries []Entry) int {
	sent := 0
	for _, e := range entries {
		s.noteReadLocked(e.Position)
		if s.cursor.isAcked(e.Position) && !s.compactedUnackedLocked(e.Position) {
			continue
		}
		if _, ok := s.pending[e.Position]; ok {
			continue
		}
		if s.txnHeldLocked(e) { // txn.go
			continue
		}
		m := metaOf(e)
		switch s.delayLocked(e.Position, m.DeliverAt) { // delayed.go
		case delayHeld:
			continue
		case delayFull:
			s.seekBackLocked(e.Position)
			return sent
		}
		cs, slot, hold := s.d.route(e, m, true)
		switch {
		case hold:
			continue
		case cs == nil:
			s.seekBackLocked(e.Position)
			return sent
		}
		s.sendLocked(cs, e, msgCount(m), slot)
		sent++
	}
	return sent
}

// seekBackLocked makes p the next entry read: entries from p on were not handed out.
func (s *Subscription) seekBackLocked(p Position) {
	s.cursor.seek(p)
	s.compactedSeekBackLocked(p) // compaction_read.go
}

// slot is the entry's Key_Shared hash slot, -1 for other subscription types.
func (s *Subscription) sendLocked(cs *Consumer, e Entry, count, slot int) {
	s.noteEntrySizeLocked(count)
	cs.permits -= count
	cs.unacked += count
	s.unacked += count
	s.pending[e.Position] = pendingAck{cs, count, slot}
	s.holdSlotLocked(cs, slot) // keyshared_join.go
	s.deliverLocked(cs, e, s.redeliveries[e.Position], count, s.ackSetFor(e.Position, count))
}

// deliverLocked counts a dispatched entry and hands it to cs's client.
func (s *Subscription) deliverLocked(cs *Consumer, e Entry, redeliveries uint32, count int, ackSet []int64) {
	t := s.t
	t.s.m.msgsOut.Add(float64(count))
	t.s.m.bytesOut.Add(float64(len(e.Data)))
	t.counters.msgsOut.Add(int64(count))
	t.counters.bytesOut.Add(int64(len(e.Data)))
	s.msgsOut.Add(int64(count))
	cs.client.Send(e, redeliveries, count, ackSet)
}

// pendingAck is a dispatched, unacknowledged entry: its consumer and message count.
type pendingAck struct {
	c    *Consumer
	n    int
	slot int // Key_Shared hash slot, -1 otherwise
}

// dropPendingLocked forgets a pending entry (acknowledged or released). A consumer blocked
// on its unacknowledged-message limit may now receive again.
func (s *Subscription) dropPendingLocked(p Position) {
	pa, ok := s.pending[p]
	if !ok {
		return
	}
	delete(s.pending, p)
	s.releaseSlotLocked(pa.slot) // may unblock held-back Key_Shared entries
	pa.c.unacked -= pa.n
	s.unacked -= pa.n
	if pa.c.unacked+pa.n >= s.t.maxUnackedPerConsumer() || s.unacked+pa.n >= s.t.maxUnackedPerSubscription() {
		s.poke()
	}
}

// canSendLocked tells whether cs may be sent an entry now: it has permits and its client is
// reading (ConsumerWritability). The active dispatcher (Exclusive, Failover) asks only this.
func (s *Subscription) canSendLocked(cs *Consumer) bool { return cs.writable() && cs.permits > 0 }

// canReceiveLocked is canSendLocked for the shared dispatchers (Shared, Key_Shared), which
// also stop at Pulsar's unacknowledged-message limits (maxUnackedMessagesPerConsumer /
// PerSubscription; 0 disables a limit). As in Pulsar the limits bound shared subscriptions
// only: an Exclusive or Failover consumer that reads a backlog without acknowledging (a
// replay, a seek) must not stall at 50,000.
func (s *Subscription) canReceiveLocked(cs *Consumer) bool {
	if !s.canSendLocked(cs) {
		return false
	}
	perConsumer, perSub := s.t.maxUnackedPerConsumer(), s.t.maxUnackedPerSubscription()
	return (perConsumer <= 0 || cs.unacked < perConsumer) && (perSub <= 0 || s.unacked < perSub)
}

// dispatchNonPersistent hands a just-published message to one consumer with permits, or
// drops it for this subscription (non-persistent semantics: no backlog).
func (s *Subscription) dispatchNonPersistent(e Entry) {
	s.mu.Lock()
	defer s.mu.Unlock()
	m := metaOf(e)
	count := msgCount(m)
	if cs := s.d.routeNonPersistent(m); cs != nil {
		cs.permits -= count
		s.deliverLocked(cs, e, 0, count, nil)
	}
}

// ackIndividual acknowledges single entries. A batch entry acknowledged with a non-empty
// ack_set that still has bits set is only partly acknowledged: it stays pending.
func (s *Subscription) ackIndividual(ctx context.Context, ids []AckID) error {
	if s.cursor == nil {
		return nil
	}
	ps := make([]Position, 0, len(ids))
	var batches []AckID
	s.mu.Lock()
	for _, id := range ids {
		if partial(id.AckSet) {
			batches = append(batches, id)
			continue
		}
		p := id.Position
		s.dropPendingLocked(p)
		delete(s.redeliveries, p)
		ps = append(ps, p)
	}
	s.mu.Unlock()
	berr := s.ackBatchIndexes(batches)
	if len(ps) == 0 {
		s.acked()
		return berr
	}
	err := errors.Join(s.cursor.delete(ctx, ps), berr)
	s.acked() // keyshared_join.go
	return err
}

func partial(ackSet []int64) bool {
	for _, w := range ackSet {
		if w != 0 {
			return true
		}
	}
	return false
}

// ackCumulative acknowledges everything up to and including id.
func (s *Subscription) ackCumulative(ctx context.Context, id AckID) error {
	if s.cursor == nil {
		return nil
	}
	p := id.Position
	if partial(id.AckSet) {
		// The batch itself is not complete: acknowledge up to the entry before it, and
		// its acknowledged members. (L, -1) means "before the first entry of L".
		defer func() { _ = s.ackBatchIndexes([]AckID{id}) }()
		p.EntryID--
	}
	s.mu.Lock()
	for q := range s.pending {
		if !p.Less(q) {
			s.dropPendingLocked(q)
		}
	}
	for q := range s.redeliveries {
		if !p.Less(q) {
			delete(s.redeliveries, q)
		}
	}
	s.mu.Unlock()
	err := s.cursor.markDelete(ctx, p)
	s.acked() // keyshared_join.go
	return err
}

// redeliver releases cs's unacknowledged entries (only ids, for Shared and Key_Shared
// subscriptions when given) for redelivery; Exclusive and Failover rewind over all of them
// to keep order, as Pulsar does.
func (s *Subscription) redeliver(cs *Consumer, ids []Position) {
	if s.cursor == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var only map[Position]bool
	if s.d.releasesListed() && len(ids) > 0 {
		only = make(map[Position]bool, len(ids))
		for _, id := range ids {
			only[id] = true
		}
	}
	s.releaseLocked(cs, only)
}

// consumersSnapshot returns the attached consumers.
func (s *Subscription) consumersSnapshot() []*Consumer {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]*Consumer(nil), s.consumers...)
}

// reset moves the subscription's cursor with move (SEEK). The caller has disconnected the
// consumers; reads in flight are discarded.
func (s *Subscription) reset(move func(*logCursor) error) error {
	if s.cursor == nil {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped {
		return nil
	}
	for p := range s.pending {
		s.dropPendingLocked(p)
	}
	clear(s.redeliveries)
	s.d.dropHeld()
	s.maxRead = Earliest
	s.delayed.clear()
	s.gen++
	s.rewindReq = false
	if s.cancelRead != nil {
		s.cancelRead()
	}
	return move(s.cursor)
}

// stop ends dispatch and releases the cursor (its durable state stays).
func (s *Subscription) stop() {
	s.mu.Lock()
	if s.stopped {
		s.mu.Unlock()
		return
	}
	s.stopped = true
	if s.cancelRead != nil {
		s.cancelRead()
	}
	close(s.stopCh)
	s.mu.Unlock()
	if s.cursor != nil {
		s.cursor.close()
	}
}
