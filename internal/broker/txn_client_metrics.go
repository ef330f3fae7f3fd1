package broker

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/magnetar-io/magnetar/internal/topics"
	"github.com/magnetar-io/magnetar/internal/txn"
)

// The transaction buffer client's series, with Pulsar's names: the coordinator's
// END_TXN_ON_PARTITION and END_TXN_ON_SUBSCRIPTION calls to topic owners, this broker
// included, as pulsar_txn_tb_client_{commit,abort}_failed_total (counters) and
// pulsar_txn_tb_client_{commit,abort}_latency (summaries in nanoseconds, Pulsar's unit)
// per topic, and pulsar_txn_tb_client_pending_requests (calls in flight). With
// exposeTopicLevelMetricsInPrometheus off the topic label goes and the values are summed per
// namespace, quantiles dropped (they do not add up), as for the other per-topic series.
//
// Calls are per transaction and topic, never per message, so a map under a mutex is cheap
// enough. A topic's entry is dropped after tbClientIdle without calls, so the map is bounded
// by the topics that ended transactions recently, not by every topic ever seen.

const tbClientIdle = time.Hour

// tbClientQuantiles are Pulsar's quantiles for the latency summaries.
var tbClientQuantiles = map[float64]float64{0.5: 0.01, 0.75: 0.01, 0.95: 0.01, 0.99: 0.01, 0.999: 0.01, 0.9999: 0.01, 1: 0.01}

type tbClientStats struct {
	cluster    string
	topicLevel func() bool
	pending    atomic.Int64

	mu     sync.Mutex
	topics map[string]*tbClientTopic // by topic name

	pendingDesc                 *prometheus.Desc
	commitFailed, abortFailed   [2]*prometheus.Desc // [0] per topic, [1] per namespace
	commitLatency, abortLatency [2]*prometheus.Desc
}

type tbClientTopic struct {
	namespace                   string
	commitFailed, abortFailed   int64
	commitLatency, abortLatency prometheus.Summary
	used                        time.Time
}

func newTBClientStats(cluster string, topicLevel func() bool) *tbClientStats {
	perTopic, perNS := []string{"cluster", "namespace", "topic"}, []string{"cluster", "namespace"}
	both := func(name, help string) [2]*prometheus.Desc {
		return [2]*prometheus.Desc{prometheus.NewDesc(name, help, perTopic, nil), prometheus.NewDesc(name, help, perNS, nil)}
	}
	return &tbClientStats{cluster: cluster, topicLevel: topicLevel, topics: map[string]*tbClientTopic{},
		pendingDesc:   prometheus.NewDesc("pulsar_txn_tb_client_pending_requests", "End-of-transaction calls to topic owners in flight.", []string{"cluster"}, nil),
		commitFailed:  both("pulsar_txn_tb_client_commit_failed_total", "Commit calls to a topic owner that failed (each retry counts)."),
		abortFailed:   both("pulsar_txn_tb_client_abort_failed_total", "Abort calls to a topic owner that failed (each retry counts)."),
		commitLatency: both("pulsar_txn_tb_client_commit_latency", "Nanoseconds a successful commit call to a topic owner took."),
		abortLatency:  both("pulsar_txn_tb_client_abort_latency", "Nanoseconds a successful abort call to a topic owner took."),
	}
}

// observe runs call, one END_TXN_ON_* to topic's owner, and records its outcome.
func (st *tbClientStats) observe(topic string, action txn.Action, call func() error) error {
	st.pending.Add(1)
	start := time.Now()
	err := call()
	took := time.Since(start)
	st.pending.Add(-1)

	st.mu.Lock()
	defer st.mu.Unlock()
	e := st.topics[topic]
	if e == nil {
		ns := "unknown" // as Pulsar labels a name it cannot parse
		if n, perr := topics.ParseName(topic); perr == nil {
			ns = n.NamespaceName()
		}
		e = &tbClientTopic{namespace: ns,
			commitLatency: prometheus.NewSummary(prometheus.SummaryOpts{Name: "commit", Objectives: tbClientQuantiles}),
			abortLatency:  prometheus.NewSummary(prometheus.SummaryOpts{Name: "abort", Objectives: tbClientQuantiles})}
		st.topics[topic] = e
	}
	e.used = start
	switch {
	case err != nil && action == txn.Commit:
		e.commitFailed++
	case err != nil:
		e.abortFailed++
	case action == txn.Commit:
		e.commitLatency.Observe(float64(took.Nanoseconds()))
	default:
		e.abortLatency.Observe(float64(took.Nanoseconds()))
	}
	return err
}

// Describe sends nothing: the collector is unchecked because a name's label set depends on
// the (dynamic) topic-level switch, as for the topic service's own collector.
func (st *tbClientStats) Describe(chan<- *prometheus.Desc) {}

// tbClientSum is one namespace's summed values.
type tbClientSum struct {
	commitFailed, abortFailed int64
	commit, abort             summarySum
}

type summarySum struct {
	count uint64
	sum   float64
}

func (s *summarySum) add(m prometheus.Summary) {
	var d dto.Metric
	_ = m.Write(&d)
	s.count += d.GetSummary().GetSampleCount()
	s.sum += d.GetSummary().GetSampleSum()
}

func (st *tbClientStats) Collect(ch chan<- prometheus.Metric) {
	ch <- prometheus.MustNewConstMetric(st.pendingDesc, prometheus.GaugeValue, float64(st.pending.Load()), st.cluster)
	perTopic := st.topicLevel()
	st.mu.Lock()
	defer st.mu.Unlock()
	now := time.Now()
	sums := map[string]*tbClientSum{}
	for name, e := range st.topics {
		if now.Sub(e.used) > tbClientIdle {
			delete(st.topics, name)
			continue
		}
		if perTopic {
			l := []string{st.cluster, e.namespace, name}
			ch <- prometheus.MustNewConstMetric(st.commitFailed[0], prometheus.CounterValue, float64(e.commitFailed), l...)
			ch <- prometheus.MustNewConstMetric(st.abortFailed[0], prometheus.CounterValue, float64(e.abortFailed), l...)
			ch <- relabel(st.commitLatency[0], e.commitLatency, l)
			ch <- relabel(st.abortLatency[0], e.abortLatency, l)
			continue
		}
		s := sums[e.namespace]
		if s == nil {
			s = &tbClientSum{}
			sums[e.namespace] = s
		}
		s.commitFailed += e.commitFailed
		s.abortFailed += e.abortFailed
		s.commit.add(e.commitLatency)
		s.abort.add(e.abortLatency)
	}
	for ns, s := range sums {
		l := []string{st.cluster, ns}
		ch <- prometheus.MustNewConstMetric(st.commitFailed[1], prometheus.CounterValue, float64(s.commitFailed), l...)
		ch <- prometheus.MustNewConstMetric(st.abortFailed[1], prometheus.CounterValue, float64(s.abortFailed), l...)
		ch <- prometheus.MustNewConstSummary(st.commitLatency[1], s.commit.count, s.commit.sum, nil, l...)
		ch <- prometheus.MustNewConstSummary(st.abortLatency[1], s.abort.count, s.abort.sum, nil, l...)
	}
}

// relabel is summary m's current values under desc and labels.
func relabel(desc *prometheus.Desc, m prometheus.Summary, labels []string) prometheus.Metric {
	var d dto.Metric
	_ = m.Write(&d)
	q := make(map[float64]float64, len(d.GetSummary().GetQuantile()))
	for _, x := range d.GetSummary().GetQuantile() {
		q[x.GetQuantile()] = x.GetValue()
	}
	return prometheus.MustNewConstSummary(desc, d.GetSummary().GetSampleCount(), d.GetSummary().GetSampleSum(), q, labels...)
}

// instrumented wraps the coordinator's participants with the client's series.
type instrumented struct {
	txn.Participants
	st *tbClientStats
}

func (p instrumented) EndPartition(ctx context.Context, topic string, id txn.ID, action txn.Action, low uint64) error {
	return p.st.observe(topic, action, func() error { return p.Participants.EndPartition(ctx, topic, id, action, low) })
}

func (p instrumented) EndSubscription(ctx context.Context, sub txn.Subscription, id txn.ID, action txn.Action, low uint64) error {
	return p.st.observe(sub.Topic, action, func() error { return p.Participants.EndSubscription(ctx, sub, id, action, low) })
}
