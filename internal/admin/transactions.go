package admin

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/magnetar-io/magnetar/internal/topics"
	"github.com/magnetar-io/magnetar/internal/txn"
)

// Transactions (/admin/v3/transactions, Pulsar's Transactions resource; issue 17): the
// coordinators served by this broker and the transaction state of the topics loaded here.
// JSON field names are Pulsar's TransactionCoordinatorStats, TransactionMetadata,
// TransactionBufferStats, TransactionPendingAckStats, TransactionInBufferStats and
// TransactionInPendingAckStats. A coordinator or topic served by another broker is
// answered 404 here (ask its owner).

func (s *server) registerTransactions(mux *http.ServeMux) {
	const p = "/admin/v3/transactions/"
	mux.HandleFunc("GET "+p+"coordinatorStats", s.handle(s.txnCoordinatorStats))
	mux.HandleFunc("GET "+p+"transactionMetadata/{most}/{least}", s.handle(s.txnMetadata))
	mux.HandleFunc("GET "+p+"slowTransactions/{timeout}", s.handle(s.txnSlow))
	mux.HandleFunc("GET "+p+"transactionBufferStats/{tenant}/{namespace}/{topic}", s.handle(s.txnBufferStats))
	mux.HandleFunc("GET "+p+"pendingAckStats/{tenant}/{namespace}/{topic}/{sub}", s.handle(s.txnPendingAckStats))
	mux.HandleFunc("GET "+p+"transactionInBufferStats/{tenant}/{namespace}/{topic}/{most}/{least}", s.handle(s.txnInBufferStats))
	mux.HandleFunc("GET "+p+"transactionInPendingAckStats/{tenant}/{namespace}/{topic}/{sub}/{most}/{least}", s.handle(s.txnInPendingAckStats))
}

func (s *server) coordinators() (*txn.Coordinators, error) {
	if s.txn == nil {
		return nil, fmt.Errorf("%w: This Broker is not configured with transactionCoordinatorEnabled=true.", ErrUnavailable)
	}
	return s.txn, nil
}

// txnCoordinatorStatsJSON is Pulsar's TransactionCoordinatorStats.
type txnCoordinatorStatsJSON struct {
	State            string `json:"state"`
	LeastSigBits     uint64 `json:"leastSigBits"`
	LowWaterMark     uint64 `json:"lowWaterMark"`
	OngoingTxnSize   int64  `json:"ongoingTxnSize"`
	RecoverStartTime int64  `json:"recoverStartTime"`
	RecoverEndTime   int64  `json:"recoverEndTime"`
}

func coordinatorStatsJSON(st txn.CoordinatorStats) txnCoordinatorStatsJSON {
	return txnCoordinatorStatsJSON{State: st.State, LeastSigBits: st.Sequence, LowWaterMark: st.LowWaterMark,
		OngoingTxnSize: st.Active, RecoverStartTime: st.RecoverStarted.UnixMilli(), RecoverEndTime: st.RecoverEnded.UnixMilli()}
}

// txnCoordinatorStats: one coordinator's stats (?coordinatorId=N) or every one served here
// by id.
func (s *server) txnCoordinatorStats(_ context.Context, r *http.Request) (any, error) {
	cs, err := s.coordinators()
	if err != nil {
		return nil, err
	}
	if v := r.URL.Query().Get("coordinatorId"); v != "" {
		id, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("%w: coordinatorId %q", ErrBadRequest, v)
		}
		c, ok := cs.Loaded(id)
		if !ok {
			return nil, fmt.Errorf("%w: transaction coordinator %d is not served by this broker", errNotFound, id)
		}
		return coordinatorStatsJSON(c.Stats()), nil
	}
	out := map[string]txnCoordinatorStatsJSON{}
	for _, c := range cs.All() {
		out[strconv.FormatUint(c.ID(), 10)] = coordinatorStatsJSON(c.Stats())
	}
	return out, nil
}

func pathTxnID(r *http.Request) (txn.ID, error) {
	most, err1 := strconv.ParseUint(r.PathValue("most"), 10, 64)
	least, err2 := strconv.ParseUint(r.PathValue("least"), 10, 64)
	if err1 != nil || err2 != nil {
		return txn.ID{}, fmt.Errorf("%w: transaction id (%s, %s)", ErrBadRequest, r.PathValue("most"), r.PathValue("least"))
	}
	return txn.ID{Most: most, Least: least}, nil
}

// txnMetadataJSON is Pulsar's TransactionMetadata.
type txnMetadataJSON struct {
	TxnID              string                                `json:"txnId"`
	Status             string                                `json:"status"`
	OpenTimestamp      int64                                 `json:"openTimestamp"`
	TimeoutAt          int64                                 `json:"timeoutAt"`
	Owner              string                                `json:"owner,omitempty"`
	ProducedPartitions map[string]txnInBufferJSON            `json:"producedPartitions"`
	AckedPartitions    map[string]map[string]txnInPendingAck `json:"ackedPartitions"`
}

// txnInBufferJSON is Pulsar's TransactionInBufferStats.
type txnInBufferJSON struct {
	StartPosition string `json:"startPosition,omitempty"`
	Aborted       bool   `json:"aborted"`
}

// txnInPendingAck is Pulsar's TransactionInPendingAckStats.
type txnInPendingAck struct {
	CumulativeAckPosition string `json:"cumulativeAckPosition,omitempty"`
}

// metadataJSON describes a transaction; the per-topic details come from the topics loaded
// here (those elsewhere are listed without them).
func (s *server) metadataJSON(ctx context.Context, m txn.Metadata) txnMetadataJSON {
	out := txnMetadataJSON{TxnID: m.ID.String(), Status: m.Status.String(), OpenTimestamp: m.Opened.UnixMilli(),
		TimeoutAt: m.TimeoutAt.Sub(m.Opened).Milliseconds(), Owner: m.Owner,
		ProducedPartitions: map[string]txnInBufferJSON{}, AckedPartitions: map[string]map[string]txnInPendingAck{}}
	for _, p := range m.Partitions {
		var st txnInBufferJSON
		if b := s.loadedBuffer(p); b != nil {
			if pos, aborted, ok := b.TxnStats(m.ID); ok {
				st = txnInBufferJSON{StartPosition: pos.String(), Aborted: aborted}
			}
		}
		out.ProducedPartitions[p] = st
	}
	for _, sub := range m.Subscriptions {
		if out.AckedPartitions[sub.Topic] == nil {
			out.AckedPartitions[sub.Topic] = map[string]txnInPendingAck{}
		}
		var st txnInPendingAck
		if pa := s.loadedPendingAcks(sub.Topic, sub.Name); pa != nil {
			if cum, ok := pa.TxnStats(m.ID); ok && cum != nil {
				st.CumulativeAckPosition = cum.String()
			}
		}
		out.AckedPartitions[sub.Topic][sub.Name] = st
	}
	_ = ctx
	return out
}

func (s *server) loadedTopic(topic string) *topics.Topic {
	ta, ok := s.broker.(topicsAPI)
	if !ok {
		return nil
	}
	n, err := topics.ParseName(topic)
	if err != nil {
		return nil
	}
	return ta.svc.Loaded(n)
}

func (s *server) loadedBuffer(topic string) *txn.Buffer {
	if t := s.loadedTopic(topic); t != nil {
		return t.TxnBuffer()
	}
	return nil
}

func (s *server) loadedPendingAcks(topic, sub string) *txn.PendingAcks {
	if t := s.loadedTopic(topic); t != nil {
		return t.TxnPendingAcks(sub)
	}
	return nil
}

func (s *server) txnMetadata(ctx context.Context, r *http.Request) (any, error) {
	cs, err := s.coordinators()
	if err != nil {
		return nil, err
	}
	id, err := pathTxnID(r)
	if err != nil {
		return nil, err
	}
	c, ok := cs.Loaded(id.Most)
	if !ok {
		return nil, fmt.Errorf("%w: transaction coordinator %d is not served by this broker", errNotFound, id.Most)
	}
	m, ok := c.Get(id)
	if !ok {
		return nil, fmt.Errorf("%w: transaction %s", errNotFound, id)
	}
	return s.metadataJSON(ctx, m), nil
}

// txnSlow lists the transactions open longer than {timeout} ms (?coordinatorId=N: of one
// coordinator), by transaction id.
func (s *server) txnSlow(ctx context.Context, r *http.Request) (any, error) {
	cs, err := s.coordinators()
	if err != nil {
		return nil, err
	}
	ms, err := strconv.ParseInt(r.PathValue("timeout"), 10, 64)
	if err != nil || ms < 0 {
		return nil, fmt.Errorf("%w: timeout %q (milliseconds)", ErrBadRequest, r.PathValue("timeout"))
	}
	var only *uint64
	if v := r.URL.Query().Get("coordinatorId"); v != "" {
		id, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("%w: coordinatorId %q", ErrBadRequest, v)
		}
		only = &id
	}
	now := time.Now()
	out := map[string]txnMetadataJSON{}
	for _, c := range cs.All() {
		if only != nil && c.ID() != *only {
			continue
		}
		for _, m := range c.List() {
			if now.Sub(m.Opened) >= time.Duration(ms)*time.Millisecond {
				out[m.ID.String()] = s.metadataJSON(ctx, m)
			}
		}
	}
	return out, nil
}

func (s *server) pathTopic(r *http.Request) (string, error) {
	t := "persistent://" + r.PathValue("tenant") + "/" + r.PathValue("namespace") + "/" + r.PathValue("topic")
	if _, err := topics.ParseName(t); err != nil {
		return "", fmt.Errorf("%w: %w", ErrBadRequest, err)
	}
	return t, nil
}

// topicTxn is the loaded topic behind a per-topic transaction request.
func (s *server) topicTxn(r *http.Request) (*topics.Topic, error) {
	if _, err := s.coordinators(); err != nil {
		return nil, err
	}
	name, err := s.pathTopic(r)
	if err != nil {
		return nil, err
	}
	t := s.loadedTopic(name)
	if t == nil || t.TxnBuffer() == nil {
		return nil, fmt.Errorf("%w: topic %s is not loaded by this broker", topics.ErrTopicNotFound, name)
	}
	return t, nil
}

// txnBufferStatsJSON is Pulsar's TransactionBufferStats.
type txnBufferStatsJSON struct {
	State                    string `json:"state"`
	MaxReadPosition          string `json:"maxReadPosition"`
	LastSnapshotTimestamps   int64  `json:"lastSnapshotTimestamps"`
	OngoingTxnSize           int    `json:"ongoingTxnSize"`
	TotalAbortedTransactions int    `json:"totalAbortedTransactions"`
	RecoverStartTime         int64  `json:"recoverStartTime"`
	RecoverEndTime           int64  `json:"recoverEndTime"`
}

func (s *server) txnBufferStats(_ context.Context, r *http.Request) (any, error) {
	t, err := s.topicTxn(r)
	if err != nil {
		return nil, err
	}
	st := t.TxnBuffer().Stats()
	var snap int64
	if !st.LastSnapshot.IsZero() {
		snap = st.LastSnapshot.UnixMilli()
	}
	return txnBufferStatsJSON{State: st.State, MaxReadPosition: st.MaxReadPosition.String(), LastSnapshotTimestamps: snap,
		OngoingTxnSize: st.Ongoing, TotalAbortedTransactions: st.Aborted,
		RecoverStartTime: st.RecoverStart.UnixMilli(), RecoverEndTime: st.RecoverEnd.UnixMilli()}, nil
}

// txnPendingAckStatsJSON is Pulsar's TransactionPendingAckStats.
type txnPendingAckStatsJSON struct {
	State          string `json:"state"`
	OngoingTxnSize int    `json:"ongoingTxnSize"`
}

func (s *server) txnPendingAckStats(_ context.Context, r *http.Request) (any, error) {
	t, err := s.topicTxn(r)
	if err != nil {
		return nil, err
	}
	pa := t.TxnPendingAcks(r.PathValue("sub"))
	if pa == nil {
		return nil, fmt.Errorf("%w: subscription %s is not loaded on %s", topics.ErrSubscriptionNotFound, r.PathValue("sub"), t.Name())
	}
	st := pa.Stats()
	return txnPendingAckStatsJSON{State: st.State, OngoingTxnSize: st.Ongoing}, nil
}

func (s *server) txnInBufferStats(_ context.Context, r *http.Request) (any, error) {
	t, err := s.topicTxn(r)
	if err != nil {
		return nil, err
	}
	id, err := pathTxnID(r)
	if err != nil {
		return nil, err
	}
	var out txnInBufferJSON
	if pos, aborted, ok := t.TxnBuffer().TxnStats(id); ok {
		out = txnInBufferJSON{StartPosition: pos.String(), Aborted: aborted}
	}
	return out, nil
}

func (s *server) txnInPendingAckStats(_ context.Context, r *http.Request) (any, error) {
	t, err := s.topicTxn(r)
	if err != nil {
		return nil, err
	}
	id, err := pathTxnID(r)
	if err != nil {
		return nil, err
	}
	var out txnInPendingAck
	if pa := t.TxnPendingAcks(r.PathValue("sub")); pa != nil {
		if cum, ok := pa.TxnStats(id); ok && cum != nil {
			out.CumulativeAckPosition = cum.String()
		}
	}
	return out, nil
}
