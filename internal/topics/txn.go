package topics

import (
	"context"
	"errors"
	"fmt"

	"github.com/magnetar-io/magnetar/internal/managedledger"
	"github.com/magnetar-io/magnetar/internal/resources"
	"github.com/magnetar-io/magnetar/internal/txn"
	"github.com/magnetar-io/magnetar/internal/wire"
)

// Transactions (issue 17). With transactionCoordinatorEnabled each persistent topic loads
// its transaction state (internal/txn.TopicState: the transaction buffer and the pending
// acknowledgements of its subscriptions) before it is used. The topic service's part is
// small: a transactional publish is stamped with its transaction and admitted by the
// buffer (which sets the log's read limit); dispatch acknowledges markers and entries of
// aborted transactions instead of delivering them and skips what open transactions hold;
// a transactional acknowledgement goes to the pending acknowledgements. The rest (what is
// visible, conflicts, commit and abort) is internal/txn's.

// TxnID is a transaction id (Pulsar's TxnID: most and least significant bits).
type TxnID = txn.ID

// errTxnNotAppended is what the buffer hears of an admitted entry that was not appended.
var errTxnNotAppended = errors.New("topics: not appended")

// txnEnabled tells whether transactional publishes and acknowledgements are served.
func (s *Service) txnEnabled() bool { return s.cfg.Transaction.CoordinatorEnabled }

// openTopicTxn loads t's transaction state; its recovery decides what cursors may read, so
// it runs before the topic is handed out.
func (s *Service) openTopicTxn(ctx context.Context, t *Topic) error {
	if !s.txnEnabled() || t.log == nil {
		return nil
	}
	st, err := txn.OpenTopicState(ctx, txn.TopicStateOptions{
		Topic: t.full, Log: t.log.ml, Ledgers: s.ledgers, Config: s.cfg.Transaction,
		Logger: s.log, AppendMarker: t.appendMarker,
	})
	if err != nil {
		return fmt.Errorf("%w: loading the transaction state of %s: %w", wire.ErrPersistence, t.full, err)
	}
	t.txn = st
	return nil
}

// appendMarker appends a transaction marker with its dispatch metadata (so dispatch knows
// it for a marker without parsing it).
func (t *Topic) appendMarker(data []byte, cb func(Position, error)) error {
	return t.log.append(data, nil, ParseEntryMeta(data), func(p Position, _ int64, err error) { cb(p, err) })
}

// closeTxn closes t's transaction state (not its log).
func (t *Topic) closeTxn(ctx context.Context) {
	if t.txn == nil {
		return
	}
	if err := t.txn.Close(ctx); err != nil {
		t.logg.Warn("closing the transaction state failed", "err", err)
	}
}

// deleteTopicTxn deletes the transaction state log of a deleted topic, if it has one.
func (s *Service) deleteTopicTxn(ctx context.Context, name Name) error {
	ln := txn.StateLogName(name.ManagedLedgerName())
	ok, err := s.ledgers.Exists(ctx, ln)
	if err != nil || !ok {
		return err
	}
	if err := s.ledgers.Delete(ctx, ln); err != nil {
		return fmt.Errorf("%w: delete the transaction state of %s: %w", wire.ErrPersistence, name, err)
	}
	return nil
}

// txnState returns t's transaction state, ready for transactional work (Prepare ran), or
// why there is none.
func (t *Topic) txnState(ctx context.Context) (*txn.TopicState, error) {
	switch {
	case !t.s.txnEnabled():
		return nil, fmt.Errorf("%w: Transactions are not enabled.", ErrTransactionsDisabled)
	case t.log == nil:
		return nil, fmt.Errorf("%w: %s is not persistent: transactions need a persistent topic", wire.ErrNotAllowed, t.full)
	case t.txn == nil:
		return nil, fmt.Errorf("%w: %s has no transaction state", wire.ErrServiceNotReady, t.full)
	case t.txn.Used():
		return t.txn, nil // prepared: no timer for every transactional publish
	}
	ctx, cancel := context.WithTimeout(ctx, opTimeout)
	defer cancel()
	if err := t.txn.Prepare(ctx); err != nil {
		return nil, err
	}
	return t.txn, nil
}

// beforeTxnAppend stamps a transactional message with its transaction (the Go client sends
// it only on CommandSend) and has the buffer admit it; Producer.Publish then appends it
// and reports the outcome (txnAppended, txnNotAppended).
func (t *Topic) beforeTxnAppend(m Message) (Message, error) {
	st, err := t.txnState(context.Background())
	if err != nil {
		return m, err
	}
	id := *m.Txn
	if !m.Meta.InTxn || m.Meta.TxnMost != id.Most || m.Meta.TxnLeast != id.Least {
		e, err := wire.ParseEntry(m.Data, false)
		if err != nil {
			return m, fmt.Errorf("%w: %w", wire.ErrNotAllowed, err)
		}
		md, err := wire.ParseMetadata(e.Metadata)
		if err != nil {
			return m, fmt.Errorf("%w: %w", wire.ErrNotAllowed, err)
		}
		if m.Data, err = txn.StampEntry(m.Data, md, id); err != nil {
			return m, fmt.Errorf("%w: %w", wire.ErrNotAllowed, err)
		}
		m.Meta.InTxn, m.Meta.TxnMost, m.Meta.TxnLeast = true, id.Most, id.Least
	}
	if err := st.Buffer().BeforeAppend(id); err != nil {
		return m, err
	}
	return m, nil
}

// txnAppended tells the buffer where an admitted entry went (txn nil: not transactional).
func (t *Topic) txnAppended(id *TxnID, pos Position, err error) {
	if id != nil && t.txn != nil {
		t.txn.Buffer().Appended(*id, pos, err)
	}
}

// txnNotAppended tells the buffer an admitted entry was not appended after all.
func (t *Topic) txnNotAppended(id *TxnID) { t.txnAppended(id, Position{}, errTxnNotAppended) }

// attachTxnLocked gives a new durable subscription its pending acknowledgements (replaying
// those logged before a restart) before it dispatches. Caller holds t.mu.
func (t *Topic) attachTxnLocked(_ context.Context, sub *Subscription) error {
	if t.txn == nil || !sub.durable || sub.cursor == nil {
		return nil
	}
	pa, err := t.txn.Subscription(sub.name, subTxnOps{sub})
	if err != nil {
		return fmt.Errorf("%w: the pending acknowledgements of %s on %s: %w", wire.ErrPersistence, sub.name, t.full, err)
	}
	sub.txn = pa
	return nil
}

// txnRemoveSubscription forgets the pending acknowledgements of a deleted subscription.
func (t *Topic) txnRemoveSubscription(name string) {
	if t.txn != nil {
		t.txn.RemoveSubscription(name)
	}
}

// ackTxn acknowledges ids within transaction id: held by the pending acknowledgements
// until the transaction ends; the consumer no longer has them pending.
func (c *Consumer) ackTxn(ctx context.Context, ids []AckID, cumulative bool, id TxnID) error {
	s := c.sub
	if _, err := s.t.txnState(ctx); err != nil {
		return err
	}
	if s.txn == nil {
		return fmt.Errorf("%w: transactional acknowledgements need a durable subscription", wire.ErrNotAllowed)
	}
	if typ := s.Type(); cumulative && (typ == Shared || typ == KeyShared) {
		return fmt.Errorf("%w: cumulative acknowledgement is not allowed on a %s subscription", wire.ErrNotAllowed, typ)
	}
	acks := make([]txn.AckPos, len(ids))
	for i, a := range ids {
		acks[i].Pos = a.Position
		if partial(a.AckSet) {
			acks[i].Bits = make([]uint64, len(a.AckSet))
			for j, w := range a.AckSet {
				acks[i].Bits[j] = uint64(w)
			}
		}
	}
	if err := s.txn.Ack(ctx, id, acks, cumulative); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, a := range ids {
		if cumulative {
			for q := range s.pending {
				if !a.Position.Less(q) {
					s.dropPendingLocked(q)
				}
			}
		} else if !partial(a.AckSet) {
			s.dropPendingLocked(a.Position)
		}
	}
	return nil
}

// txnHidden tells whether an entry is never given to consumers: a marker, or an entry of
// a transaction aborted here. Dispatch acknowledges such entries; readers skip them.
func (t *Topic) txnHidden(m EntryMeta) bool {
	return m.Marker != 0 || (m.InTxn && t.txn != nil && t.txn.Buffer().Aborted(TxnID{Most: m.TxnMost, Least: m.TxnLeast}))
}

// TxnAborted tells whether an entry (its dispatch metadata) belongs to a transaction
// aborted on this topic.
func (t *Topic) TxnAborted(m EntryMeta) bool {
	return m.InTxn && t.txn != nil && t.txn.Buffer().Aborted(TxnID{Most: m.TxnMost, Least: m.TxnLeast})
}

// LastStableIndex is Kafka's last stable offset: the index of the first message of the
// oldest transaction still open here (the first entry at the log's read limit), the high
// watermark when none is.
func (t *Topic) LastStableIndex(ctx context.Context) (int64, error) {
	hw := t.HighWatermark()
	if !t.txnUsed() {
		return hw, nil
	}
	lim, on := t.log.ml.ReadLimit()
	if !on {
		return hw, nil
	}
	c, err := t.log.ml.NewUnlimitedReader(lim, true)
	if err != nil {
		return 0, fmt.Errorf("%w: reading %s at its read limit: %w", wire.ErrPersistence, t.full, mlErr(err))
	}
	defer func() { _ = c.Close(ctx) }()
	if !c.HasMoreEntries() {
		return hw, nil // the open transaction's first entry is not stored yet
	}
	es, err := c.ReadEntries(ctx, 1, 0)
	if err != nil {
		return 0, fmt.Errorf("%w: reading %s at its read limit: %w", wire.ErrPersistence, t.full, mlErr(err))
	}
	if len(es) == 0 {
		return hw, nil
	}
	last, _, ok, err := wire.StoredIndex(es[0].Data)
	if err != nil || !ok {
		return hw, nil
	}
	return min(hw, last-int64(msgCount(metaOf(es[0])))+1), nil
}

// txnUsed tells whether t's log may hold transactional entries and markers.
func (t *Topic) txnUsed() bool { return t.txn != nil && t.txn.Used() }

// txnHeldLocked tells dispatch to skip e: a marker or an entry of an aborted transaction
// (acknowledged here, so it never holds the backlog), or an entry open transactions hold
// wholly. Caller holds s.mu.
func (s *Subscription) txnHeldLocked(e Entry) bool {
	m := metaOf(e)
	if s.t.txnHidden(m) {
		if err := s.cursor.delete(context.Background(), []Position{e.Position}); err != nil {
			s.log.Warn("acknowledging a transaction marker or aborted entry failed", "position", e.Position, "err", err)
		}
		return true
	}
	if s.txn == nil {
		return false
	}
	whole, held := s.txn.Pending(e.Position)
	if whole {
		return true
	}
	if held == nil {
		return false
	}
	n := msgCount(m)
	left := s.txnMaskLocked(e.Position, n, s.cursor.batchAckSet(e.Position))
	for _, w := range left {
		if w != 0 {
			return false
		}
	}
	return true
}

// txnMaskLocked leaves the batch members open transactions hold out of bits (the members
// of the entry at p still to deliver; nil: all count of them).
func (s *Subscription) txnMaskLocked(p Position, count int, bits []uint64) []uint64 {
	if s.txn == nil {
		return bits
	}
	_, held := s.txn.Pending(p)
	if held == nil {
		return bits
	}
	out := make([]uint64, (count+63)/64)
	for i := range out {
		w := memberMask(count, i)
		if bits != nil {
			w = 0
			if i < len(bits) {
				w = bits[i]
			}
		}
		if i < len(held) {
			w &^= held[i]
		}
		out[i] = w
	}
	return out
}

// memberMask is the bits of word i naming members of a batch of n.
func memberMask(n, i int) uint64 {
	switch left := n - 64*i; {
	case left >= 64:
		return ^uint64(0)
	case left <= 0:
		return 0
	default:
		return 1<<uint(left) - 1
	}
}

// subTxnOps is a subscription as its pending acknowledgements see it.
type subTxnOps struct{ s *Subscription }

func (o subTxnOps) Acknowledged(p Position) bool     { return o.s.cursor.isAcked(p) }
func (o subTxnOps) Remaining(p Position) []uint64    { return o.s.cursor.batchAckSet(p) }
func (o subTxnOps) MarkDeletePosition() Position     { return o.s.cursor.markDeletePosition() }
func (o subTxnOps) BatchSize(p Position) int         { return o.s.batchSize(p) }
func (o subTxnOps) Redeliver(ps []Position)          { o.s.redeliverHeld(ps) }
func (o subTxnOps) Ack(a []txn.AckPos, c bool) error { return o.s.ackCommitted(a, c) }

func (o subTxnOps) Persisted(ctx context.Context, acks []txn.AckPos, _ bool) (bool, error) {
	if err := o.s.cursor.c.Flush(ctx); err != nil {
		return false, mlErr(err)
	}
	// The mark-delete position is always persisted; ranges past it may not be.
	md := o.s.cursor.markDeletePosition()
	for _, a := range acks {
		if md.Less(a.Pos) {
			return false, nil
		}
	}
	return true, nil
}

// batchSize is the message count of the entry at p when dispatch knows it (0 otherwise).
func (s *Subscription) batchSize(p Position) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if pa, ok := s.pending[p]; ok {
		return pa.n
	}
	return 0
}

// redeliverHeld makes entries an aborted transaction held deliverable again.
func (s *Subscription) redeliverHeld(ps []Position) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, p := range ps {
		s.dropPendingLocked(p)
	}
	s.requestRewindLocked()
}

// ackCommitted applies a committed transaction's acknowledgements.
func (s *Subscription) ackCommitted(acks []txn.AckPos, cumulative bool) error {
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	ids := make([]AckID, len(acks))
	for i, a := range acks {
		ids[i].Position = a.Pos
		for _, w := range a.Bits {
			ids[i].AckSet = append(ids[i].AckSet, int64(w))
		}
	}
	if cumulative {
		return s.ackCumulative(ctx, ids[0])
	}
	return s.ackIndividual(ctx, ids)
}

// EndTxnOnPartition commits or aborts transaction id on topic name
// (END_TXN_ON_PARTITION); lowWater is its coordinator's low water mark. The topic is
// loaded if needed (it must be owned here).
func (s *Service) EndTxnOnPartition(ctx context.Context, name Name, id TxnID, commit bool, lowWater uint64) error {
	t, err := s.getTopic(ctx, name, false)
	if err != nil {
		return err
	}
	st, err := t.txnState(ctx)
	if err != nil {
		return err
	}
	return st.Buffer().End(ctx, id, txnAction(commit), lowWater)
}

// EndTxnOnSubscription commits or aborts transaction id's acknowledgements on
// subscription sub of topic name (END_TXN_ON_SUBSCRIPTION). A subscription that no longer
// exists is ErrSubscriptionNotFound (the coordinator then forgets it).
func (s *Service) EndTxnOnSubscription(ctx context.Context, name Name, sub string, id TxnID, commit bool, lowWater uint64) error {
	t, err := s.getTopic(ctx, name, false)
	if err != nil {
		return err
	}
	if _, err := t.txnState(ctx); err != nil {
		return err
	}
	ss, err := t.txnSubscription(ctx, sub)
	if err != nil {
		return err
	}
	return ss.txn.End(ctx, id, txnAction(commit), lowWater)
}

func txnAction(commit bool) txn.Action {
	if commit {
		return txn.Commit
	}
	return txn.Abort
}

// txnSubscription is the durable subscription sub with its pending acknowledgements,
// loaded without a consumer if it is not loaded yet.
func (t *Topic) txnSubscription(ctx context.Context, sub string) (*Subscription, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return nil, fmt.Errorf("%w: topic %s is closing", wire.ErrServiceNotReady, t.full)
	}
	if ss := t.subs[sub]; ss != nil {
		if ss.txn == nil {
			return nil, fmt.Errorf("%w: %s on %s is not durable", wire.ErrNotAllowed, sub, t.full)
		}
		return ss, nil
	}
	if _, ok := t.log.ml.Cursor(sub); !ok {
		return nil, fmt.Errorf("%w: %s on %s", wire.ErrSubscriptionNotFound, sub, t.full)
	}
	cur, err := t.log.openCursor(ctx, sub, false)
	if err != nil {
		return nil, fmt.Errorf("%w: open cursor %s on %s: %w", wire.ErrPersistence, sub, t.full, err)
	}
	ss := newSubscription(t, sub, Exclusive, true, cur)
	if err := t.attachTxnLocked(ctx, ss); err != nil {
		return nil, err
	}
	t.subs[sub] = ss
	return ss, nil
}

// TxnBuffer is t's transaction buffer (nil without transactions), for stats.
func (t *Topic) TxnBuffer() *txn.Buffer {
	if t.txn == nil {
		return nil
	}
	return t.txn.Buffer()
}

// TxnPendingAcks are the pending acknowledgements of subscription sub (nil: none loaded).
func (t *Topic) TxnPendingAcks(sub string) *txn.PendingAcks {
	t.mu.Lock()
	defer t.mu.Unlock()
	if ss := t.subs[sub]; ss != nil {
		return ss.txn
	}
	return nil
}

// TxnLedgers is the managed-ledger factory transaction coordinators keep their logs in.
func (s *Service) TxnLedgers() *managedledger.Factory { return s.ledgers }

// EnsureTxnSystem creates tenant "pulsar", namespace "pulsar/system" and the coordinator
// assign topic with n partitions when they are missing (Pulsar's
// initialize-transaction-coordinator-metadata), and returns the assign topic's partition
// count (the one recorded first stays).
func (s *Service) EnsureTxnSystem(ctx context.Context, n int) (int, error) {
	steps := []func() error{
		func() error {
			return s.res.CreateTenant(ctx, "pulsar", resources.TenantInfo{AllowedClusters: []string{s.cfg.ClusterName}})
		},
		func() error {
			return s.res.CreateNamespace(ctx, "pulsar", "system", resources.Policies{ReplicationClusters: []string{s.cfg.ClusterName}})
		},
		func() error {
			return s.res.CreatePartitionedTopic(ctx, "persistent", "pulsar", "system", "transaction_coordinator_assign",
				resources.PartitionedTopicMetadata{Partitions: n})
		},
	}
	for _, step := range steps {
		if err := step(); err != nil && !errors.Is(err, resources.ErrAlreadyExists) {
			return 0, fmt.Errorf("%w: creating the transaction coordinator assign topic: %w", wire.ErrMetadata, err)
		}
	}
	m, err := s.res.PartitionedTopic(ctx, "persistent", "pulsar", "system", "transaction_coordinator_assign")
	if err != nil {
		return 0, fmt.Errorf("%w: reading the transaction coordinator assign topic: %w", wire.ErrMetadata, err)
	}
	if m.Partitions <= 0 {
		return 0, fmt.Errorf("%w: %s has %d partitions", wire.ErrMetadata, txn.AssignTopic, m.Partitions)
	}
	return m.Partitions, nil
}

// maxLastMessageScan bounds how far back GET_LAST_MESSAGE_ID looks for a deliverable entry.
const maxLastMessageScan = 100

// txnLastMessageID is the last message consumers can be given on a topic with
// transactions (ok false: the topic has none): the newest entry at or before the buffer's
// max-read position that is neither a marker nor of an aborted transaction. A reader's
// HasNext compares against it, so it must not name what dispatch never delivers.
func (t *Topic) txnLastMessageID(ctx context.Context) (Position, int32, bool, error) {
	if t.txn == nil || !t.txn.Used() {
		return Position{}, 0, false, nil
	}
	b := t.txn.Buffer()
	p := b.MaxRead()
	for range maxLastMessageScan {
		if p.EntryID < 0 {
			break
		}
		e, err := t.log.readAt(ctx, p)
		if err != nil {
			return Position{}, 0, true, fmt.Errorf("%w: read entry %s of %s: %w", wire.ErrPersistence, p, t.full, err)
		}
		m := metaOf(e)
		if m.Marker == 0 && (!m.InTxn || !b.Aborted(TxnID{Most: m.TxnMost, Least: m.TxnLeast})) {
			return p, lastBatchIndex(m), true, nil
		}
		p.EntryID--
	}
	return p, -1, true, nil
}
