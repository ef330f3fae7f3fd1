package txn

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
)

// Prometheus series of the coordinators served here, with Pulsar's names and labels
// (cluster, coordinator_id): pulsar_txn_active_count, the _total counters, and
// pulsar_txn_execution_latency_le_<ms> (and _le_overflow), one series per bucket as
// Pulsar exposes them. Read from the coordinators at scrape time.
type collector struct {
	cs      *Coordinators
	cluster string
	active  *prometheus.Desc
	counts  []*prometheus.Desc
	latency []*prometheus.Desc
}

// Collector returns the coordinators' metrics for cluster.
func (cs *Coordinators) Collector(cluster string) prometheus.Collector {
	labels := []string{"cluster", "coordinator_id"}
	c := &collector{cs: cs, cluster: cluster,
		active: prometheus.NewDesc("pulsar_txn_active_count", "Transactions open or ending on the coordinator.", labels, nil)}
	for _, n := range []struct{ name, help string }{
		{"pulsar_txn_created_total", "Transactions the coordinator opened."},
		{"pulsar_txn_committed_total", "Transactions the coordinator committed."},
		{"pulsar_txn_aborted_total", "Transactions the coordinator aborted (timed out ones included)."},
		{"pulsar_txn_timeout_total", "Transactions the coordinator aborted at their timeout."},
		{"pulsar_txn_append_log_total", "Records the coordinator appended to its transaction log."},
	} {
		c.counts = append(c.counts, prometheus.NewDesc(n.name, n.help, labels, nil))
	}
	for _, b := range latencyBucketsMs {
		c.latency = append(c.latency, prometheus.NewDesc("pulsar_txn_execution_latency_le_"+strconv.FormatInt(b, 10),
			"Transactions that ended within this many ms of their opening (and above the previous bucket).", labels, nil))
	}
	c.latency = append(c.latency, prometheus.NewDesc("pulsar_txn_execution_latency_le_overflow",
		"Transactions that took longer than the largest bucket.", labels, nil))
	return c
}

func (c *collector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.active
	for _, d := range c.counts {
		ch <- d
	}
	for _, d := range c.latency {
		ch <- d
	}
}

func (c *collector) Collect(ch chan<- prometheus.Metric) {
	for _, co := range c.cs.All() {
		st := co.Stats()
		id := strconv.FormatUint(st.ID, 10)
		ch <- prometheus.MustNewConstMetric(c.active, prometheus.GaugeValue, float64(st.Active), c.cluster, id)
		for i, v := range []int64{st.Created, st.Committed, st.Aborted, st.TimedOut, st.Appends} {
			ch <- prometheus.MustNewConstMetric(c.counts[i], prometheus.CounterValue, float64(v), c.cluster, id)
		}
		for i, v := range st.Latency {
			ch <- prometheus.MustNewConstMetric(c.latency[i], prometheus.GaugeValue, float64(v), c.cluster, id)
		}
	}
}
