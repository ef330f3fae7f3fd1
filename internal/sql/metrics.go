package sql

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// metrics are the SQL server's Prometheus series (pulsar_sql_*).
type metrics struct {
	queries      *prometheus.CounterVec
	duration     prometheus.Histogram
	running      prometheus.Gauge
	entries      prometheus.Counter
	bytes        prometheus.Counter
	rows         prometheus.Counter
	searchReads  prometheus.Counter
	decodeErrors prometheus.Counter
	authFailures prometheus.Counter
}

func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		queries: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "pulsar_sql_queries_total",
			Help: "SQL statements run, by result (ok, error, refused)"}, []string{"result"}),
		duration: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "pulsar_sql_query_duration_seconds",
			Help: "SQL statement durations", Buckets: prometheus.ExponentialBuckets(0.001, 4, 10)}),
		running:      prometheus.NewGauge(prometheus.GaugeOpts{Name: "pulsar_sql_running_queries", Help: "SQL statements running"}),
		entries:      prometheus.NewCounter(prometheus.CounterOpts{Name: "pulsar_sql_scanned_entries_total", Help: "entries SQL scans read from storage"}),
		bytes:        prometheus.NewCounter(prometheus.CounterOpts{Name: "pulsar_sql_scanned_bytes_total", Help: "entry bytes SQL scans read from storage"}),
		rows:         prometheus.NewCounter(prometheus.CounterOpts{Name: "pulsar_sql_scanned_rows_total", Help: "messages SQL scans read from storage (before filters)"}),
		searchReads:  prometheus.NewCounter(prometheus.CounterOpts{Name: "pulsar_sql_publish_time_search_reads_total", Help: "entries read by publish-time searches of SQL scans"}),
		decodeErrors: prometheus.NewCounter(prometheus.CounterOpts{Name: "pulsar_sql_decode_errors_total", Help: "messages whose payload did not decode with their schema (their columns read NULL)"}),
		authFailures: prometheus.NewCounter(prometheus.CounterOpts{Name: "pulsar_sql_authentication_failures_total", Help: "SQL logins refused"}),
	}
	if reg != nil {
		for _, c := range []prometheus.Collector{m.queries, m.duration, m.running, m.entries, m.bytes, m.rows, m.searchReads, m.decodeErrors, m.authFailures} {
			reg.MustRegister(c)
		}
	}
	return m
}

func (m *metrics) observe(st Stats, d time.Duration, err error) {
	result := "ok"
	if err != nil {
		result = "error"
	}
	m.queries.WithLabelValues(result).Inc()
	m.duration.Observe(d.Seconds())
	m.entries.Add(float64(st.Entries))
	m.bytes.Add(float64(st.Bytes))
	m.rows.Add(float64(st.Rows))
	m.searchReads.Add(float64(st.SearchReads))
}
