package txn

import (
	"slices"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// The topic side's series, with Pulsar's names, types and labels: the transaction buffer's
// pulsar_txn_tb_{active,committed,aborted}_total per topic, and the pending
// acknowledgements' pulsar_txn_tp_{committed,aborted}_count_total (status succeed or
// failed) and pulsar_txn_tp_commit_latency (a summary in microseconds) per subscription.
// With exposeTopicLevelMetricsInPrometheus off Pulsar drops the topic and subscription
// labels and sums per namespace; the topic service's collector walks the topics and calls
// Emit* with the labels it chose, so these follow the same switch as its own series.

// BufferSample is a transaction buffer's (or a namespace's buffers') values at scrape time.
type BufferSample struct {
	// Active counts transactions with entries here that have not ended; Committed and
	// Aborted count transactions that ended here since the topic was loaded.
	Active, Committed, Aborted int64
}

// Add sums o into s (one namespace's topics).
func (s *BufferSample) Add(o BufferSample) {
	s.Active += o.Active
	s.Committed += o.Committed
	s.Aborted += o.Aborted
}

// Sample returns the buffer's values for the metrics.
func (b *Buffer) Sample() BufferSample {
	b.mu.Lock()
	defer b.mu.Unlock()
	return BufferSample{Active: int64(len(b.ongoing)), Committed: b.stats.committed, Aborted: b.stats.aborted}
}

// commitQuantiles are the quantiles of Pulsar's pulsar_txn_tp_commit_latency.
var commitQuantiles = map[float64]float64{0.5: 0.01, 0.9: 0.01, 0.99: 0.01, 0.999: 0.01}

// newCommitLatency is a subscription's commit latency summary. It is not registered: the
// topic service's collector reads it at scrape time under the labels of that scrape.
func newCommitLatency() prometheus.Summary {
	return prometheus.NewSummary(prometheus.SummaryOpts{Name: "pulsar_txn_tp_commit_latency", Objectives: commitQuantiles})
}

// PendingAckSample is a subscription's (or a namespace's subscriptions') values.
type PendingAckSample struct {
	Committed, CommitFailed, Aborted, AbortFailed int64
	// LatencyCount and LatencySumMicros summarize the successful commits; Quantiles (µs
	// by quantile) only a single subscription's, as quantiles do not add up.
	LatencyCount     uint64
	LatencySumMicros float64
	Quantiles        map[float64]float64
}

// Add sums o into s, dropping the quantiles.
func (s *PendingAckSample) Add(o PendingAckSample) {
	s.Committed += o.Committed
	s.CommitFailed += o.CommitFailed
	s.Aborted += o.Aborted
	s.AbortFailed += o.AbortFailed
	s.LatencyCount += o.LatencyCount
	s.LatencySumMicros += o.LatencySumMicros
	s.Quantiles = nil
}

// Sample returns the subscription's values for the metrics.
func (pa *PendingAcks) Sample() PendingAckSample {
	pa.mu.Lock()
	smp := PendingAckSample{Committed: pa.stats.committed, CommitFailed: pa.stats.commitFailed,
		Aborted: pa.stats.aborted, AbortFailed: pa.stats.abortFailed}
	lat := pa.stats.commitLatency
	pa.mu.Unlock()
	if lat == nil {
		return smp
	}
	var m dto.Metric
	if err := lat.Write(&m); err != nil {
		return smp
	}
	s := m.GetSummary()
	smp.LatencyCount, smp.LatencySumMicros = s.GetSampleCount(), s.GetSampleSum()
	smp.Quantiles = make(map[float64]float64, len(s.GetQuantile()))
	for _, q := range s.GetQuantile() {
		smp.Quantiles[q.GetQuantile()] = q.GetValue()
	}
	return smp
}

// TopicDescs are the descriptors of the topic side's series for one label set.
type TopicDescs struct {
	tbActive, tbCommitted, tbAborted  *prometheus.Desc
	tpCommitted, tpAborted, tpLatency *prometheus.Desc
}

func newTopicDescs(bufferLabels, subLabels []string) *TopicDescs {
	status := slices.Concat(subLabels, []string{"status"})
	d := func(name, help string, labels []string) *prometheus.Desc {
		return prometheus.NewDesc(name, help, labels, nil)
	}
	return &TopicDescs{
		tbActive:    d("pulsar_txn_tb_active_total", "Transactions with entries on the topic that have not ended.", bufferLabels),
		tbCommitted: d("pulsar_txn_tb_committed_total", "Transactions committed on the topic.", bufferLabels),
		tbAborted:   d("pulsar_txn_tb_aborted_total", "Transactions aborted on the topic.", bufferLabels),
		tpCommitted: d("pulsar_txn_tp_committed_count_total", "Transactions whose acknowledgements the subscription committed (status: succeed or failed).", status),
		tpAborted:   d("pulsar_txn_tp_aborted_count_total", "Transactions whose acknowledgements the subscription aborted (status: succeed or failed).", status),
		tpLatency:   d("pulsar_txn_tp_commit_latency", "Microseconds a subscription took to commit a transaction's acknowledgements.", subLabels),
	}
}

var (
	// PerTopicDescs label by cluster, namespace and topic (and subscription).
	PerTopicDescs = newTopicDescs([]string{"cluster", "namespace", "topic"}, []string{"cluster", "namespace", "topic", "subscription"})
	// PerNamespaceDescs label by cluster and namespace only.
	PerNamespaceDescs = newTopicDescs([]string{"cluster", "namespace"}, []string{"cluster", "namespace"})
)

// EmitBuffer sends a buffer sample under label values lv (d's buffer labels).
func (d *TopicDescs) EmitBuffer(ch chan<- prometheus.Metric, s BufferSample, lv ...string) {
	ch <- prometheus.MustNewConstMetric(d.tbActive, prometheus.GaugeValue, float64(s.Active), lv...)
	ch <- prometheus.MustNewConstMetric(d.tbCommitted, prometheus.CounterValue, float64(s.Committed), lv...)
	ch <- prometheus.MustNewConstMetric(d.tbAborted, prometheus.CounterValue, float64(s.Aborted), lv...)
}

// EmitPendingAck sends a pending-acknowledgement sample under label values lv (d's
// subscription labels, without status).
func (d *TopicDescs) EmitPendingAck(ch chan<- prometheus.Metric, s PendingAckSample, lv ...string) {
	for _, c := range []struct {
		desc     *prometheus.Desc
		ok, fail int64
	}{{d.tpCommitted, s.Committed, s.CommitFailed}, {d.tpAborted, s.Aborted, s.AbortFailed}} {
		ch <- prometheus.MustNewConstMetric(c.desc, prometheus.CounterValue, float64(c.ok), slices.Concat(lv, []string{"succeed"})...)
		ch <- prometheus.MustNewConstMetric(c.desc, prometheus.CounterValue, float64(c.fail), slices.Concat(lv, []string{"failed"})...)
	}
	ch <- prometheus.MustNewConstSummary(d.tpLatency, s.LatencyCount, s.LatencySumMicros, s.Quantiles, lv...)
}
