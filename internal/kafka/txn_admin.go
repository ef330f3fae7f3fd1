package kafka

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/magnetar-io/magnetar/internal/auth"
	"github.com/magnetar-io/magnetar/internal/metadata"
	"github.com/magnetar-io/magnetar/internal/resources"
	"github.com/magnetar-io/magnetar/internal/txn"
)

// Kafka's transaction admin APIs (KIP-664: kafka-transactions.sh, kadm): ListTransactions
// and DescribeTransactions answer from the transactional ids' records and internal/txn's
// coordinator, DescribeProducers from a partition's producer state (partition.go), and
// WriteTxnMarkers aborts the transaction a producer left open on a partition. They only
// read what the coordinator requests keep (txn.go); none of them settles a record, which
// stays the job of the id's next request.

// Kafka's transaction states (its TransactionState names).
const (
	stateEmpty          = "Empty"
	stateOngoing        = "Ongoing"
	statePrepareCommit  = "PrepareCommit"
	statePrepareAbort   = "PrepareAbort"
	stateCompleteCommit = "CompleteCommit"
	stateCompleteAbort  = "CompleteAbort"
)

// txnStateNames are the states a ListTransactions filter may name; the last two never
// occur here (a record is never Dead, no epoch fence is a state of its own).
var txnStateNames = []string{stateEmpty, stateOngoing, statePrepareCommit, statePrepareAbort,
	stateCompleteCommit, stateCompleteAbort, "Dead", "PrepareEpochFence"}

// txnView is what the admin APIs show of a transactional id.
type txnView struct {
	state      string
	start      int64    // ms since the epoch the transaction opened, -1 without one
	partitions []string // Pulsar partitions of the transaction under way
}

// viewTxn is p's state as Kafka names it, read without changing anything. A transaction
// the coordinator no longer knows (and no commit was under way) was aborted by its
// timeout: the next request of the id settles that.
func viewTxn(p resources.KafkaTxnProducer, co *txn.Coordinator) txnView {
	v := txnView{start: -1}
	if !p.TxnOpen {
		switch p.Completed {
		case txnCommitted:
			v.state = stateCompleteCommit
		case txnAborted:
			v.state = stateCompleteAbort
		default:
			v.state = stateEmpty
		}
		return v
	}
	md, ok := co.Get(txn.ID{Most: p.TxnMost, Least: p.TxnLeast})
	switch {
	case p.Committing || ok && md.Status == txn.Committing:
		v.state = statePrepareCommit
	case !ok:
		v.state = stateCompleteAbort
		return v
	case md.Status == txn.Open:
		v.state = stateOngoing
	default:
		v.state = statePrepareAbort
	}
	if ok {
		v.start = md.Opened.UnixMilli()
	}
	v.partitions = p.Partitions
	return v
}

// mayDescribeTxn is Kafka's DESCRIBE on a transactional id, mapped as its other uses are
// (authorizeTxnID): its owner and superusers.
func (c *conn) mayDescribeTxn(id string, p resources.KafkaTxnProducer, ver metadata.Version) error {
	return c.authorizeTxnID(&txnRec{id: id, p: p, ver: ver})
}

// adminTimeout bounds one admin request's metadata reads.
const adminTimeout = 30 * time.Second

// handleListTransactions (key 66, v0-v2) lists the transactional ids this broker
// coordinates (the admin client asks every broker and merges), filtered by state,
// producer id, duration (v1) and id pattern (v2, a regular expression the whole id must
// match, as Java's matches()); ids the principal may not describe are left out, as Kafka
// does.
func handleListTransactions(c *conn, req kmsg.Request, reply func(kmsg.Response)) {
	r := req.(*kmsg.ListTransactionsRequest)
	resp := r.ResponseKind().(*kmsg.ListTransactionsResponse)
	go func() {
		err := c.s.listTransactions(c, r, resp)
		resp.ErrorCode = errorCode(err)
		if err != nil {
			resp.TransactionStates = nil
			c.s.log.Debug("kafka ListTransactions failed", "err", err)
		}
		reply(resp)
	}()
}

func (s *Server) listTransactions(c *conn, r *kmsg.ListTransactionsRequest, resp *kmsg.ListTransactionsResponse) error {
	for _, f := range r.StateFilters {
		if !slices.Contains(txnStateNames, f) {
			resp.UnknownStateFilters = append(resp.UnknownStateFilters, f)
		}
	}
	var pattern *regexp.Regexp
	if r.TransactionalIDPattern != nil && *r.TransactionalIDPattern != "" {
		var err error
		if pattern, err = regexp.Compile("^(?:" + *r.TransactionalIDPattern + ")$"); err != nil {
			return fmt.Errorf("%w: %w", kerr.InvalidRegularExpression, err)
		}
	}
	ctx, cancel := context.WithTimeout(c.ctx, adminTimeout)
	defer cancel()
	ids, err := s.be.TxnProducers(ctx)
	if err != nil {
		return err
	}
	now := time.Now().UnixMilli()
	for _, id := range ids {
		if pattern != nil && !pattern.MatchString(id) {
			continue
		}
		co, _, err := s.be.TxnCoordinator(ctx, id)
		switch {
		case errors.Is(err, errTxnsOff):
			return nil // no coordinator here: nothing is coordinated, whatever records remain
		case err != nil:
			return err
		case co == nil:
			continue // another broker's to list
		}
		p, ver, err := s.be.TxnProducer(ctx, id)
		if errors.Is(err, resources.ErrNotFound) {
			continue
		}
		if err != nil {
			return err
		}
		if c.mayDescribeTxn(id, p, ver) != nil {
			continue
		}
		v := viewTxn(p, co)
		switch {
		case len(r.ProducerIDFilters) > 0 && !slices.Contains(r.ProducerIDFilters, p.ProducerID),
			len(r.StateFilters) > 0 && !slices.Contains(r.StateFilters, v.state),
			r.Version >= 1 && r.DurationFilterMillis >= 0 && (v.start < 0 || now-v.start <= r.DurationFilterMillis):
			continue
		}
		st := kmsg.NewListTransactionsResponseTransactionState()
		st.TransactionalID, st.ProducerID, st.TransactionState = id, p.ProducerID, v.state
		resp.TransactionStates = append(resp.TransactionStates, st)
	}
	return nil
}

// handleDescribeTransactions (key 65, v0) describes transactional ids this broker
// coordinates: state, timeout, start, producer id and epoch, and the partitions of the
// transaction under way (those the principal may look up). Per id: NOT_COORDINATOR,
// TRANSACTIONAL_ID_NOT_FOUND, TRANSACTIONAL_ID_AUTHORIZATION_FAILED as Kafka.
func handleDescribeTransactions(c *conn, req kmsg.Request, reply func(kmsg.Response)) {
	r := req.(*kmsg.DescribeTransactionsRequest)
	resp := r.ResponseKind().(*kmsg.DescribeTransactionsResponse)
	go func() {
		ctx, cancel := context.WithTimeout(c.ctx, adminTimeout)
		defer cancel()
		for _, id := range r.TransactionalIDs {
			st := kmsg.NewDescribeTransactionsResponseTransactionState()
			st.TransactionalID, st.ProducerID, st.ProducerEpoch, st.StartTimestamp = id, -1, -1, -1
			if err := c.s.describeTxn(ctx, c, id, &st); err != nil {
				st.ErrorCode = errorCode(err)
				c.s.log.Debug("kafka DescribeTransactions refused", "transactionalId", id, "err", err)
			}
			resp.TransactionStates = append(resp.TransactionStates, st)
		}
		reply(resp)
	}()
}

func (s *Server) describeTxn(ctx context.Context, c *conn, id string, st *kmsg.DescribeTransactionsResponseTransactionState) error {
	co, node, err := s.be.TxnCoordinator(ctx, id)
	if err != nil {
		return err
	}
	if co == nil {
		return fmt.Errorf("%w: node %d coordinates transactional id %q", ErrNotCoordinator, node, id)
	}
	p, ver, err := s.be.TxnProducer(ctx, id)
	if errors.Is(err, resources.ErrNotFound) {
		return fmt.Errorf("%w: %q", kerr.TransactionalIDNotFound, id)
	}
	if err != nil {
		return err
	}
	if err := c.mayDescribeTxn(id, p, ver); err != nil {
		return err
	}
	v := viewTxn(p, co)
	st.State, st.TimeoutMillis, st.StartTimestamp = v.state, p.TimeoutMs, v.start
	st.ProducerID, st.ProducerEpoch = p.ProducerID, p.Epoch
	for _, part := range v.partitions {
		topic, idx, ok := s.namer.KafkaPartition(part)
		if !ok || c.authorizeName(ctx, topic, auth.TopicLookup, "") != nil {
			continue
		}
		i := slices.IndexFunc(st.Topics, func(t kmsg.DescribeTransactionsResponseTransactionStateTopic) bool { return t.Topic == topic })
		if i < 0 {
			t := kmsg.NewDescribeTransactionsResponseTransactionStateTopic()
			t.Topic = topic
			st.Topics = append(st.Topics, t)
			i = len(st.Topics) - 1
		}
		st.Topics[i].Partitions = append(st.Topics[i].Partitions, idx)
	}
	return nil
}

// handleDescribeProducers (key 61, v0) lists each partition's idempotent and
// transactional producers (those whose batches this broker saw or found in the log's tail
// when it opened the partition, partition.go) with their epoch, last sequence, last
// publish time and the first offset of their transaction still open here. Kafka asks for
// READ on the topic: consume here.
func handleDescribeProducers(c *conn, req kmsg.Request, reply func(kmsg.Response)) {
	r := req.(*kmsg.DescribeProducersRequest)
	resp := r.ResponseKind().(*kmsg.DescribeProducersResponse)
	go func() {
		for _, t := range r.Topics {
			rt := kmsg.NewDescribeProducersResponseTopic()
			rt.Topic = t.Topic
			for _, idx := range t.Partitions {
				rp := kmsg.NewDescribeProducersResponseTopicPartition()
				rp.Partition = idx
				err := c.authorizeName(c.ctx, t.Topic, auth.TopicConsume, "")
				var p *partition
				if err == nil {
					p, _, err = c.s.openPartition(c.ctx, t.Topic, idx)
				}
				if err == nil {
					rp.ActiveProducers = p.describeProducers()
				}
				rp.ErrorCode, rp.ErrorMessage = errorCode(err), errorMessage(err)
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
		reply(resp)
	}()
}

// describeProducers is the partition's producer state, by producer id.
func (p *partition) describeProducers() []kmsg.DescribeProducersResponseTopicPartitionActiveProducer {
	type snap struct {
		id int64
		st producerState
	}
	p.mu.Lock()
	snaps := make([]snap, 0, len(p.producers))
	for id, st := range p.producers {
		snaps = append(snaps, snap{id, *st})
	}
	p.mu.Unlock()
	slices.SortFunc(snaps, func(a, b snap) int { return compareInt64(a.id, b.id) })
	out := make([]kmsg.DescribeProducersResponseTopicPartitionActiveProducer, 0, len(snaps))
	for _, sn := range snaps {
		ap := kmsg.NewDescribeProducersResponseTopicPartitionActiveProducer()
		ap.ProducerID, ap.ProducerEpoch, ap.LastSequence, ap.LastTimestamp = sn.id, int32(sn.st.epoch), sn.st.lastSeq, sn.st.lastTime
		// No coordinator epoch is recorded (markers carry none): -1, as Kafka's for a
		// producer without a marker.
		ap.CoordinatorEpoch = -1
		if sn.st.txnStart >= 0 && p.log.TxnOpen(sn.st.txn) {
			ap.CurrentTxnStartOffset = sn.st.txnStart
		}
		out = append(out, ap)
	}
	return out
}

func compareInt64(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// handleWriteTxnMarkers (key 27, v1) is what kafka-transactions.sh abort sends to a
// partition's leader: end the transaction producer (id, epoch) has open there. Markers are
// internal/txn's to write, so only aborts are taken (Log.AbortTxn: the whole transaction
// when its coordinator is here, else this partition, which is how a hanging one goes); a
// commit would make one partition's data visible apart from the rest of its transaction
// and is refused with INVALID_TXN_STATE. Kafka asks for CLUSTER_ACTION on the cluster:
// superusers here, as the other cluster operations.
func handleWriteTxnMarkers(c *conn, req kmsg.Request, reply func(kmsg.Response)) {
	r := req.(*kmsg.WriteTxnMarkersRequest)
	resp := r.ResponseKind().(*kmsg.WriteTxnMarkersResponse)
	go func() {
		ctx, cancel := context.WithTimeout(c.ctx, time.Minute)
		defer cancel()
		authErr := c.superUser("write transaction markers on")
		for _, m := range r.Markers {
			rm := kmsg.NewWriteTxnMarkersResponseMarker()
			rm.ProducerID = m.ProducerID
			for _, t := range m.Topics {
				rt := kmsg.NewWriteTxnMarkersResponseMarkerTopic()
				rt.Topic = t.Topic
				for _, idx := range t.Partitions {
					rp := kmsg.NewWriteTxnMarkersResponseMarkerTopicPartition()
					rp.Partition = idx
					err := authErr
					if err == nil && m.Committed {
						err = fmt.Errorf("%w: only aborts are written this way (internal/txn commits)", kerr.InvalidTxnState)
					}
					var p *partition
					if err == nil {
						p, _, err = c.s.openPartition(ctx, t.Topic, idx)
					}
					if err == nil {
						err = p.abortProducerTxn(ctx, m.ProducerID, m.ProducerEpoch)
					}
					if err != nil {
						c.s.log.Info("kafka WriteTxnMarkers refused", "topic", t.Topic, "partition", idx, "producerId", m.ProducerID, "err", err)
					} else {
						c.s.log.Info("kafka transaction aborted by WriteTxnMarkers", "topic", t.Topic, "partition", idx, "producerId", m.ProducerID, "epoch", m.ProducerEpoch)
					}
					rp.ErrorCode = errorCode(err)
					rt.Partitions = append(rt.Partitions, rp)
				}
				rm.Topics = append(rm.Topics, rt)
			}
			resp.Markers = append(resp.Markers, rm)
		}
		reply(resp)
	}()
}

// abortProducerTxn aborts the transaction producer id has open on p. Nothing open is
// success (Kafka would write a marker that ends nothing); an epoch older than the
// producer's is INVALID_PRODUCER_EPOCH, as Kafka refuses a stale marker.
func (p *partition) abortProducerTxn(ctx context.Context, id int64, epoch int16) error {
	p.mu.Lock()
	st := p.producers[id]
	if st == nil || st.txnStart < 0 {
		p.mu.Unlock()
		return nil
	}
	if epoch < st.epoch {
		cur := st.epoch
		p.mu.Unlock()
		return fmt.Errorf("%w: epoch %d of producer %d is older than %d", kerr.InvalidProducerEpoch, epoch, id, cur)
	}
	tx := st.txn
	p.mu.Unlock()
	if !p.log.TxnOpen(tx) {
		return nil
	}
	err := p.log.AbortTxn(ctx, tx)
	if errors.Is(err, txn.ErrInvalidStatus) {
		return fmt.Errorf("%w: transaction %s of producer %d: %w", kerr.InvalidTxnState, tx, id, err)
	}
	return err
}
