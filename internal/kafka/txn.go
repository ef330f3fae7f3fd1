package kafka

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"slices"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/magnetar-io/magnetar/internal/auth"
	"github.com/magnetar-io/magnetar/internal/metadata"
	"github.com/magnetar-io/magnetar/internal/resources"
	"github.com/magnetar-io/magnetar/internal/txn"
)

// Kafka transactions (KIP-98) on internal/txn, the coordinator Pulsar transactions use.
//
// A transactional id's state is one record in the metadata store
// (resources.KafkaTxnProducer, /kafka/txn/<id>): its producer id and epoch, and the
// transaction it has in progress. A Kafka transaction is one internal/txn transaction,
// opened when the producer first adds a partition or offsets to it (so a producer that
// only inits costs nothing), of the coordinator the id hashes to (fnv32(id) % the number
// of coordinators); the broker serving that coordinator is the Kafka transaction
// coordinator FindCoordinator names. Produce stamps a transactional batch with that
// transaction (the topic's transaction buffer then hides it until commit), EndTxn ends it
// on every partition (markers, which Fetch sends as control batches), and the offsets of
// TxnOffsetCommit wait in the record until the commit. A transaction internal/txn aborted
// by its timeout is noticed at the id's next request: the epoch is bumped (the producer is
// fenced with INVALID_PRODUCER_EPOCH, and may InitProducerId again with its old epoch,
// KIP-360). docs/design/kafka.md "Transactions".

// txnLocks serializes the requests of one transactional id on this broker (striped: a
// lock per id would have to be collected); the record's version check catches a second
// broker.
type txnLocks [64]sync.Mutex

func (l *txnLocks) lock(id string) func() {
	h := fnv.New32a()
	_, _ = h.Write([]byte(id))
	m := &l[h.Sum32()%uint32(len(l))]
	m.Lock()
	return m.Unlock
}

// txnRec is a transactional id's record as read, with its version (NotExists: none yet).
type txnRec struct {
	id  string
	p   resources.KafkaTxnProducer
	ver metadata.Version
	c   *txn.Coordinator
}

func (r *txnRec) exists() bool { return r.ver != metadata.NotExists }

func (r *txnRec) txnID() txn.ID { return txn.ID{Most: r.p.TxnMost, Least: r.p.TxnLeast} }

// errTxnsOff answers transactional requests when transactionCoordinatorEnabled is off.
var errTxnsOff = fmt.Errorf("%w: transactions are not enabled (transactionCoordinatorEnabled)", kerr.CoordinatorNotAvailable)

// loadTxn locks transactional id id, checks that this broker coordinates it, reads its
// record and settles what happened since the last request (a transaction its timeout
// aborted, a commit a crash interrupted). The caller saves changes with saveTxn and calls
// unlock.
func (s *Server) loadTxn(ctx context.Context, id string) (*txnRec, func(), error) {
	if id == "" {
		return nil, nil, fmt.Errorf("%w: empty transactional id", ErrInvalidRequest)
	}
	co, node, err := s.be.TxnCoordinator(ctx, id)
	if err != nil {
		return nil, nil, err
	}
	if co == nil {
		return nil, nil, fmt.Errorf("%w: node %d coordinates transactional id %q", ErrNotCoordinator, node, id)
	}
	unlock := s.txnLocks.lock(id)
	r := &txnRec{id: id, c: co, ver: metadata.NotExists}
	p, ver, err := s.be.TxnProducer(ctx, id)
	switch {
	case errors.Is(err, resources.ErrNotFound):
	case err != nil:
		unlock()
		return nil, nil, err
	default:
		r.p, r.ver = p, ver
	}
	if err := s.settleTxn(ctx, r); err != nil {
		unlock()
		return nil, nil, err
	}
	return r, unlock, nil
}

// settleTxn brings r up to date with internal/txn: a commit that was under way is
// finished; a transaction that ended without this front end asking (its timeout) is
// forgotten and its producer fenced, as Kafka's coordinator does when it aborts one.
func (s *Server) settleTxn(ctx context.Context, r *txnRec) error {
	if !r.p.TxnOpen {
		return nil
	}
	md, ok := r.c.Get(r.txnID())
	if r.p.Committing {
		// The commit was decided (the flag was durable before End): finish it. A
		// transaction internal/txn no longer knows has ended; the flag says how.
		if ok && (md.Status == txn.Open || md.Status == txn.Committing) {
			if err := r.c.End(ctx, r.txnID(), txn.Commit); err != nil && !errors.Is(err, txn.ErrNotFound) {
				return fmt.Errorf("kafka: finishing the commit of %s: %w", r.txnID(), err)
			}
		}
		return s.finishCommit(ctx, r)
	}
	if ok && md.Status == txn.Open {
		return nil
	}
	if ok && md.Status == txn.Aborting {
		// Its timeout is aborting it: wait for that to finish so the record is not
		// cleared while markers are still being written.
		if err := r.c.End(ctx, r.txnID(), txn.Abort); err != nil && !errors.Is(err, txn.ErrNotFound) {
			return fmt.Errorf("kafka: the timed-out transaction %s: %w", r.txnID(), err)
		}
	}
	s.log.Info("kafka transaction ended by its timeout", "transactionalId", r.id, "txn", r.txnID().String())
	clearTxn(&r.p, txnAborted)
	r.p.LastEpoch = r.p.Epoch
	r.p.Epoch++
	return s.saveTxn(ctx, r)
}

// How a transaction ended (KafkaTxnProducer.Completed).
const (
	txnCommitted = "commit"
	txnAborted   = "abort"
)

// clearTxn forgets p's transaction, which ended with result.
func clearTxn(p *resources.KafkaTxnProducer, result string) {
	p.TxnOpen, p.TxnMost, p.TxnLeast, p.Partitions, p.Offsets, p.Committing = false, 0, 0, nil, nil, false
	p.Completed = result
}

// finishCommit applies the committed transaction's offsets to their groups and clears it.
// Commits are idempotent, so a replay after a crash applies them again harmlessly.
func (s *Server) finishCommit(ctx context.Context, r *txnRec) error {
	byGroup := map[string][]groupPartition{}
	remote := map[string]bool{}
	for _, o := range r.p.Offsets {
		md := o.Metadata
		viaStore, ok := remote[o.Group]
		if !ok {
			// Not the group's coordinator: the store, which the coordinator reads whoever
			// owns the partition, rather than a cursor it may not see.
			viaStore = s.coordinates(ctx, o.Group) != nil
			remote[o.Group] = viaStore
		}
		err := s.commitOne(ctx, o.Group, o.Topic, o.Partition, o.Offset, &md, viaStore)
		if isUnknownTopic(err) {
			// Deleted since: nothing to commit to, and the id must not stay stuck on it.
			s.log.Warn("kafka committed offset of a deleted partition dropped", "group", o.Group, "topic", o.Topic, "partition", o.Partition)
			continue
		}
		if err != nil {
			return fmt.Errorf("kafka: applying the committed offset of %s %s/%d: %w", o.Group, o.Topic, o.Partition, err)
		}
		byGroup[o.Group] = append(byGroup[o.Group], groupPartition{Topic: o.Topic, Partition: o.Partition})
	}
	for g, tps := range byGroup {
		if err := s.addGroupPartitions(ctx, g, tps); err != nil {
			return err
		}
	}
	clearTxn(&r.p, txnCommitted)
	return s.saveTxn(ctx, r)
}

// saveTxn writes r's record if nobody else changed it since it was read.
func (s *Server) saveTxn(ctx context.Context, r *txnRec) error {
	ver, err := s.be.PutTxnProducer(ctx, r.id, r.p, r.ver)
	if errors.Is(err, metadata.ErrBadVersion) {
		return fmt.Errorf("%w: transactional id %q changed on another broker", kerr.ConcurrentTransactions, r.id)
	}
	if err != nil {
		return err
	}
	r.ver = ver
	if r.c != nil {
		s.txnCache.put(r.id, r.p, r.c)
	}
	return nil
}

// checkProducer checks a coordinator request's producer id and epoch against the record.
func checkProducer(r *txnRec, pid int64, epoch int16) error {
	switch {
	case !r.exists() || pid != r.p.ProducerID:
		return fmt.Errorf("%w: producer id %d is not the one of transactional id %q", kerr.InvalidProducerIDMapping, pid, r.id)
	case epoch == r.p.LastEpoch && r.p.LastEpoch != r.p.Epoch && epoch >= 0:
		// Fenced by its own transaction's timeout: the producer may recover (KIP-360).
		return fmt.Errorf("%w: the transaction of %q timed out and was aborted", kerr.InvalidProducerEpoch, r.id)
	case epoch < r.p.Epoch:
		return fmt.Errorf("%w: epoch %d of transactional id %q is older than %d", kerr.ProducerFenced, epoch, r.id, r.p.Epoch)
	case epoch > r.p.Epoch:
		return fmt.Errorf("%w: epoch %d of transactional id %q is newer than %d", kerr.InvalidProducerEpoch, epoch, r.id, r.p.Epoch)
	}
	return nil
}

// authorizeTxnID lets only the principal that created a transactional id (and
// superusers) use it when authorization is on: whoever may init the id may fence its
// producer and abort its transaction. An id created without authentication is claimed by
// the next one to init it.
func (c *conn) authorizeTxnID(r *txnRec) error {
	if !c.s.authz.Enabled() || !r.exists() || r.p.Owner == "" || r.p.Owner == c.principal.Role || c.s.authz.IsSuperUser(c.principal) {
		return nil
	}
	return fmt.Errorf("%w: transactional id %q belongs to another principal", kerr.TransactionalIDAuthorizationFailed, r.id)
}

// beginTxn opens r's transaction in internal/txn if it has none yet.
func (s *Server) beginTxn(ctx context.Context, c *conn, r *txnRec) error {
	if r.p.TxnOpen {
		return nil
	}
	id, err := r.c.New(ctx, time.Duration(r.p.TimeoutMs)*time.Millisecond, c.principal.Role)
	if err != nil {
		return err
	}
	r.p.TxnOpen, r.p.TxnMost, r.p.TxnLeast = true, id.Most, id.Least
	return nil
}

// txnCache holds the records of transactional ids this broker coordinates, as its
// coordinator requests wrote them, for the produce path (which must not read the metadata
// store per batch). An entry is trusted only while the coordinator that wrote it still has
// its transaction open: another broker may have taken the id over since. A produce for an
// id not in it (or not trusted) reads the store.
type txnCache struct {
	mu sync.Mutex
	m  map[string]cachedTxn
}

type cachedTxn struct {
	p resources.KafkaTxnProducer
	c *txn.Coordinator
}

func (tc *txnCache) put(id string, p resources.KafkaTxnProducer, c *txn.Coordinator) {
	tc.mu.Lock()
	defer tc.mu.Unlock()
	if tc.m == nil {
		tc.m = map[string]cachedTxn{}
	}
	tc.m[id] = cachedTxn{p, c}
}

func (tc *txnCache) get(id string) (resources.KafkaTxnProducer, bool) {
	tc.mu.Lock()
	ct, ok := tc.m[id]
	tc.mu.Unlock()
	if !ok || !ct.p.TxnOpen {
		return ct.p, ok
	}
	md, open := ct.c.Get(txn.ID{Most: ct.p.TxnMost, Least: ct.p.TxnLeast})
	return ct.p, open && md.Status == txn.Open
}

// produceTxn is the transaction a transactional produce of (pid, epoch) to Pulsar
// partition part belongs to: the id's transaction in progress, which must have added the
// partition (AddPartitionsToTxn comes first).
func (s *Server) produceTxn(ctx context.Context, id string, pid int64, epoch int16, part string) (txn.ID, error) {
	p, ok := s.txnCache.get(id)
	for attempt := 0; ; attempt++ {
		if !ok || attempt > 0 {
			var err error
			if p, _, err = s.be.TxnProducer(ctx, id); errors.Is(err, resources.ErrNotFound) {
				return txn.ID{}, fmt.Errorf("%w: transactional id %q is unknown", kerr.InvalidProducerIDMapping, id)
			} else if err != nil {
				return txn.ID{}, err
			}
		}
		stale := p.ProducerID != pid || epoch > p.Epoch || !p.TxnOpen || !slices.Contains(p.Partitions, part)
		if stale && attempt == 0 && ok {
			continue // the cache may be behind another broker's write: read the store once
		}
		switch {
		case p.ProducerID != pid:
			return txn.ID{}, fmt.Errorf("%w: producer id %d is not the one of transactional id %q", kerr.InvalidProducerIDMapping, pid, id)
		case epoch != p.Epoch:
			return txn.ID{}, fmt.Errorf("%w: epoch %d of transactional id %q, current %d", kerr.InvalidProducerEpoch, epoch, id, p.Epoch)
		case !p.TxnOpen || !slices.Contains(p.Partitions, part):
			return txn.ID{}, fmt.Errorf("%w: %s was not added to the transaction of %q", kerr.InvalidTxnState, part, id)
		}
		return txn.ID{Most: p.TxnMost, Least: p.TxnLeast}, nil
	}
}

// initTxnProducer serves InitProducerId with a transactional id: a new id gets a
// producer id and epoch 0; a known one gets its epoch bumped (fencing the previous holder:
// its requests now fail with PRODUCER_FENCED) and its transaction in progress aborted.
// With v3+ a producer that names its current id and epoch (or the epoch a timeout fenced)
// gets the same bump; any other pair is fenced.
func (s *Server) initTxnProducer(ctx context.Context, c *conn, r *kmsg.InitProducerIDRequest, resp *kmsg.InitProducerIDResponse) error {
	if r.TransactionTimeoutMillis <= 0 {
		return fmt.Errorf("%w: transaction timeout %d ms", kerr.InvalidTransactionTimeout, r.TransactionTimeoutMillis)
	}
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	rec, unlock, err := s.loadTxn(ctx, *r.TransactionalID)
	if err != nil {
		return err
	}
	defer unlock()
	if err := c.authorizeTxnID(rec); err != nil {
		return err
	}
	if max := rec.c.MaxTimeout(); time.Duration(r.TransactionTimeoutMillis)*time.Millisecond > max {
		return fmt.Errorf("%w: transaction timeout %d ms is more than %d (maxTransactionTimeoutMillis)", kerr.InvalidTransactionTimeout, r.TransactionTimeoutMillis, max.Milliseconds())
	}
	if rec.exists() && r.Version >= 3 && r.ProducerID >= 0 {
		if r.ProducerID != rec.p.ProducerID || (r.ProducerEpoch != rec.p.Epoch && r.ProducerEpoch != rec.p.LastEpoch) {
			return fmt.Errorf("%w: producer %d epoch %d no longer holds transactional id %q", kerr.ProducerFenced, r.ProducerID, r.ProducerEpoch, rec.id)
		}
	}
	if rec.p.TxnOpen {
		// A producer restarting with this id: what its predecessor left open is aborted
		// before the new epoch may write.
		if err := rec.c.End(ctx, rec.txnID(), txn.Abort); err != nil && !errors.Is(err, txn.ErrNotFound) {
			return fmt.Errorf("kafka: aborting the open transaction of %q: %w", rec.id, err)
		}
		clearTxn(&rec.p, txnAborted)
	}
	if !rec.exists() || rec.p.Epoch >= maxEpoch-1 {
		id, err := s.be.NextProducerID(ctx)
		if err != nil {
			return err
		}
		rec.p.ProducerID, rec.p.Epoch = id, 0
	} else {
		rec.p.Epoch++
	}
	rec.p.LastEpoch = rec.p.Epoch // nothing fenced by a timeout any more
	rec.p.Completed = ""          // a new epoch starts Empty, as Kafka's
	if rec.p.Owner == "" {
		rec.p.Owner = c.principal.Role
	}
	rec.p.TimeoutMs = r.TransactionTimeoutMillis
	if err := s.saveTxn(ctx, rec); err != nil {
		return err
	}
	resp.ProducerID, resp.ProducerEpoch = rec.p.ProducerID, rec.p.Epoch
	return nil
}

// txnPartition resolves a Kafka topic partition to its Pulsar partition for a
// transaction, checking the connection may produce to it.
func (s *Server) txnPartition(c *conn, topic string, part int32) (string, error) {
	if err := c.authorizeName(c.ctx, topic, auth.TopicProduce, ""); err != nil {
		return "", err
	}
	ref, err := s.namer.Resolve(topic)
	if err != nil {
		return "", err
	}
	n, err := s.partitionCount(c.ctx, ref.Full(), false)
	if err != nil {
		return "", err
	}
	return partitionName(ref, n, part)
}

// handleAddPartitionsToTxn (key 24, v0-v3) records that the transaction writes to the
// partitions: they become participants of its internal/txn transaction (opened now if
// this is its first), so its end reaches them.
func handleAddPartitionsToTxn(c *conn, req kmsg.Request, reply func(kmsg.Response)) {
	r := req.(*kmsg.AddPartitionsToTxnRequest)
	s := c.s
	resp := r.ResponseKind().(*kmsg.AddPartitionsToTxnResponse)
	codes := make([][]error, len(r.Topics))
	var names []string
	failed := false
	for ti, t := range r.Topics {
		codes[ti] = make([]error, len(t.Partitions))
		for pi, p := range t.Partitions {
			name, err := s.txnPartition(c, t.Topic, p)
			codes[ti][pi] = err
			failed = failed || err != nil
			names = append(names, name)
		}
	}
	// Kafka adds all or none: when one partition is refused the others are not tried.
	var all error
	if failed {
		all = kerr.OperationNotAttempted
	} else {
		all = s.addTxnPartitions(c, r.TransactionalID, r.ProducerID, r.ProducerEpoch, names)
		s.logTxnErr("AddPartitionsToTxn", r.TransactionalID, all)
	}
	for ti, t := range r.Topics {
		rt := kmsg.NewAddPartitionsToTxnResponseTopic()
		rt.Topic = t.Topic
		for pi, p := range t.Partitions {
			rp := kmsg.NewAddPartitionsToTxnResponseTopicPartition()
			rp.Partition = p
			err := codes[ti][pi]
			if err == nil {
				err = all
			}
			rp.ErrorCode = errorCode(err)
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	reply(resp)
}

func (s *Server) addTxnPartitions(c *conn, id string, pid int64, epoch int16, names []string) error {
	ctx, cancel := context.WithTimeout(c.ctx, openTimeout)
	defer cancel()
	rec, unlock, err := s.loadTxn(ctx, id)
	if err != nil {
		return err
	}
	defer unlock()
	if err := c.authorizeTxnID(rec); err != nil {
		return err
	}
	if err := checkProducer(rec, pid, epoch); err != nil {
		return err
	}
	var added []string
	for _, n := range names {
		if !slices.Contains(rec.p.Partitions, n) && !slices.Contains(added, n) {
			added = append(added, n)
		}
	}
	if len(added) == 0 {
		return nil
	}
	if err := s.beginTxn(ctx, c, rec); err != nil {
		return err
	}
	if err := rec.c.AddPartitions(ctx, rec.txnID(), added); err != nil {
		return err
	}
	rec.p.Partitions = append(rec.p.Partitions, added...)
	return s.saveTxn(ctx, rec)
}

// handleAddOffsetsToTxn (key 25, v0-v3) tells the coordinator the transaction will commit
// offsets of a group (they come with TxnOffsetCommit, to the group's coordinator).
func handleAddOffsetsToTxn(c *conn, req kmsg.Request, reply func(kmsg.Response)) {
	r := req.(*kmsg.AddOffsetsToTxnRequest)
	resp := r.ResponseKind().(*kmsg.AddOffsetsToTxnResponse)
	err := func() error {
		if r.Group == "" {
			return kerr.InvalidGroupID
		}
		ctx, cancel := context.WithTimeout(c.ctx, openTimeout)
		defer cancel()
		rec, unlock, err := c.s.loadTxn(ctx, r.TransactionalID)
		if err != nil {
			return err
		}
		defer unlock()
		if err := c.authorizeTxnID(rec); err != nil {
			return err
		}
		if err := checkProducer(rec, r.ProducerID, r.ProducerEpoch); err != nil {
			return err
		}
		if rec.p.TxnOpen {
			return nil
		}
		if err := c.s.beginTxn(ctx, c, rec); err != nil {
			return err
		}
		return c.s.saveTxn(ctx, rec)
	}()
	c.s.logTxnErr("AddOffsetsToTxn", r.TransactionalID, err)
	resp.ErrorCode = errorCode(err)
	reply(resp)
}

// handleTxnOffsetCommit (key 28, v0-v3) holds a group's offsets in the transaction's
// record until it commits (an abort drops them): a consumer of the group sees them only
// then.
func handleTxnOffsetCommit(c *conn, req kmsg.Request, reply func(kmsg.Response)) {
	r := req.(*kmsg.TxnOffsetCommitRequest)
	s := c.s
	resp := r.ResponseKind().(*kmsg.TxnOffsetCommitResponse)
	err := s.coordinates(c.ctx, r.Group)
	if err == nil && r.Group == "" {
		err = kerr.InvalidGroupID
	}
	if err == nil && r.Version >= 3 && r.MemberID != "" {
		err = s.groups.CheckCommit(r.Group, r.MemberID, r.InstanceID, r.Generation)
	}
	var offs []resources.KafkaTxnOffset
	perrs := make([][]error, len(r.Topics))
	for ti, t := range r.Topics {
		perrs[ti] = make([]error, len(t.Partitions))
		for pi, p := range t.Partitions {
			perr := err
			if perr == nil {
				perr = c.authorizeName(c.ctx, t.Topic, auth.TopicConsume, r.Group)
			}
			if perr == nil && p.Offset < 0 {
				perr = fmt.Errorf("%w: offset %d", ErrOffsetOutOfRange, p.Offset)
			}
			if perr == nil && p.Metadata != nil && len(*p.Metadata) > 4096 {
				perr = kerr.OffsetMetadataTooLarge
			}
			perrs[ti][pi] = perr
			if perr == nil {
				o := resources.KafkaTxnOffset{Group: r.Group, Topic: t.Topic, Partition: p.Partition, Offset: p.Offset}
				if p.Metadata != nil {
					o.Metadata = *p.Metadata
				}
				offs = append(offs, o)
			}
		}
	}
	var all error
	if len(offs) > 0 {
		all = s.holdTxnOffsets(c, r.TransactionalID, r.ProducerID, r.ProducerEpoch, offs)
		s.logTxnErr("TxnOffsetCommit", r.TransactionalID, all)
	}
	for ti, t := range r.Topics {
		rt := kmsg.NewTxnOffsetCommitResponseTopic()
		rt.Topic = t.Topic
		for pi, p := range t.Partitions {
			rp := kmsg.NewTxnOffsetCommitResponseTopicPartition()
			rp.Partition = p.Partition
			perr := perrs[ti][pi]
			if perr == nil {
				perr = all
			}
			rp.ErrorCode = errorCode(perr)
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	reply(resp)
}

// holdTxnOffsets adds offs to the transaction's record. The group's coordinator need not
// be the transaction's, so it writes the record directly, checking its version.
func (s *Server) holdTxnOffsets(c *conn, id string, pid int64, epoch int16, offs []resources.KafkaTxnOffset) error {
	ctx := c.ctx
	for attempt := 0; attempt < 5; attempt++ {
		unlock := s.txnLocks.lock(id)
		p, ver, err := s.be.TxnProducer(ctx, id)
		if errors.Is(err, resources.ErrNotFound) {
			unlock()
			return fmt.Errorf("%w: transactional id %q is unknown", kerr.InvalidProducerIDMapping, id)
		}
		if err != nil {
			unlock()
			return err
		}
		rec := &txnRec{id: id, p: p, ver: ver}
		if err := c.authorizeTxnID(rec); err != nil {
			unlock()
			return err
		}
		if err := checkProducer(rec, pid, epoch); err != nil {
			unlock()
			return err
		}
		if !p.TxnOpen || p.Committing {
			unlock()
			return fmt.Errorf("%w: transactional id %q has no transaction open for offsets (AddOffsetsToTxn first)", kerr.InvalidTxnState, id)
		}
		for _, o := range offs {
			i := slices.IndexFunc(rec.p.Offsets, func(h resources.KafkaTxnOffset) bool {
				return h.Group == o.Group && h.Topic == o.Topic && h.Partition == o.Partition
			})
			if i >= 0 {
				rec.p.Offsets[i] = o
			} else {
				rec.p.Offsets = append(rec.p.Offsets, o)
			}
		}
		err = s.saveTxn(ctx, rec)
		unlock()
		if !errors.Is(err, kerr.ConcurrentTransactions) {
			return err
		}
	}
	return fmt.Errorf("%w: transactional id %q keeps changing", kerr.ConcurrentTransactions, id)
}

// handleEndTxn (key 26, v0-v4) commits or aborts the transaction: internal/txn ends it on
// every partition (each writes its marker) and only then answers; a commit then applies
// the held offsets. The commit decision is made durable first, so a coordinator taking
// over after a crash finishes it (settleTxn).
func handleEndTxn(c *conn, req kmsg.Request, reply func(kmsg.Response)) {
	r := req.(*kmsg.EndTxnRequest)
	resp := r.ResponseKind().(*kmsg.EndTxnResponse)
	// Ending waits for every partition's marker: off the read loop (responses still
	// leave in order).
	go func() {
		err := c.s.endTxn(c, r)
		resp.ErrorCode = errorCode(err)
		c.s.logTxnErr("EndTxn", r.TransactionalID, err)
		reply(resp)
	}()
}

// logTxnErr logs a transactional request's failure: at debug level what a client causes
// (fencing, its own state), as a warning anything from below (storage, the coordinator).
func (s *Server) logTxnErr(api, id string, err error) {
	if err == nil {
		return
	}
	switch kafkaError(err) {
	case kerr.ProducerFenced, kerr.InvalidProducerEpoch, kerr.InvalidProducerIDMapping, kerr.InvalidTxnState,
		kerr.InvalidTransactionTimeout, kerr.NotCoordinator, kerr.OperationNotAttempted, kerr.TransactionalIDAuthorizationFailed:
		s.log.Debug("kafka transactional request refused", "api", api, "transactionalId", id, "err", err)
	default:
		s.log.Warn("kafka transactional request failed", "api", api, "transactionalId", id, "err", err)
	}
}

func (s *Server) endTxn(c *conn, r *kmsg.EndTxnRequest) error {
	ctx, cancel := context.WithTimeout(c.ctx, time.Minute)
	defer cancel()
	rec, unlock, err := s.loadTxn(ctx, r.TransactionalID)
	if err != nil {
		return err
	}
	defer unlock()
	if err := c.authorizeTxnID(rec); err != nil {
		return err
	}
	if err := checkProducer(rec, r.ProducerID, r.ProducerEpoch); err != nil {
		return err
	}
	if !rec.p.TxnOpen {
		// Nothing was added (or an EndTxn whose answer was lost is retried): Kafka's
		// clients skip EndTxn for an empty transaction, and a retry must succeed.
		return nil
	}
	if !r.Commit {
		if err := rec.c.End(ctx, rec.txnID(), txn.Abort); err != nil && !errors.Is(err, txn.ErrNotFound) {
			return err
		}
		clearTxn(&rec.p, txnAborted)
		return s.saveTxn(ctx, rec)
	}
	rec.p.Committing = true
	if err := s.saveTxn(ctx, rec); err != nil {
		return err
	}
	err = rec.c.End(ctx, rec.txnID(), txn.Commit)
	switch {
	case errors.Is(err, txn.ErrNotFound), errors.Is(err, txn.ErrInvalidStatus):
		// Its timeout aborted it between the check above and now: nothing commits.
		clearTxn(&rec.p, txnAborted)
		rec.p.LastEpoch = rec.p.Epoch
		rec.p.Epoch++
		if serr := s.saveTxn(ctx, rec); serr != nil {
			return serr
		}
		return fmt.Errorf("%w: the transaction of %q timed out and was aborted: %w", kerr.InvalidProducerEpoch, rec.id, err)
	case err != nil:
		// Decided but not done: the next request of this id (or its new producer's
		// InitProducerId) finishes it.
		return fmt.Errorf("%w: committing %s: %w", kerr.ConcurrentTransactions, rec.txnID(), err)
	}
	return s.finishCommit(ctx, rec)
}
