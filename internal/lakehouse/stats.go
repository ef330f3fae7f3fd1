package lakehouse

import (
	"context"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/magnetar-io/magnetar/internal/topics"
)

type counter struct{ atomic.Int64 }

// observer keeps a commit-duration histogram (nil-safe when metrics are off).
type observer struct{ h prometheus.Histogram }

func newObserver() observer { return observer{} }

func (o observer) Observe(v float64) {
	if o.h != nil {
		o.h.Observe(v)
	}
}

// TableStats is what GET …/{topic}/icebergStats returns for one partition (or topic).
type TableStats struct {
	Topic string `json:"topic"`
	Table string `json:"table"`
	// Running says a writer works on the topic on this broker.
	Running bool `json:"running"`
	// LastCommittedEntry is the last entry in the table ("ledgerId:entryId"; "-1:-1": none).
	LastCommittedEntry string `json:"lastCommittedEntry"`
	LastCommitTime     string `json:"lastCommitTime,omitempty"`
	// LagMessages is the topic's messages not yet committed into the table (the backlog of
	// the hold subscription, pulsar.iceberg).
	LagMessages   int64  `json:"lagMessages"`
	Commits       int64  `json:"commits"`
	CommitErrors  int64  `json:"commitErrors"`
	RowsCommitted int64  `json:"rowsCommitted"`
	DeadLetters   int64  `json:"deadLetters"`
	Gaps          int64  `json:"gaps"`
	LastError     string `json:"lastError,omitempty"`
	LastErrorTime string `json:"lastErrorTime,omitempty"`
}

// lag is the hold subscription's backlog of a loaded topic, -1 if unknown.
func (s *Service) lag(name string) int64 {
	n, err := topics.ParseName(name)
	if err != nil {
		return -1
	}
	t := s.topics.Loaded(n)
	if t == nil {
		return -1
	}
	st := t.Stats()
	if ss, ok := st.Subscriptions[HoldSubscription]; ok {
		s.mu.Lock()
		var anchor int64
		if ts := s.stats[name]; ts != nil {
			ts.mu.Lock()
			if ts.committed != none {
				anchor = ts.anchorMsgs
			}
			ts.mu.Unlock()
		}
		s.mu.Unlock()
		return max(0, ss.MsgBacklog-anchor)
	}
	return -1
}

// Stats returns the stats of every partition of topic (its base name) known here.
func (s *Service) Stats(ctx context.Context, topic topics.Name) []TableStats {
	base := topic.Base()
	s.mu.Lock()
	var names []string
	for name := range s.stats {
		if n, err := topics.ParseName(name); err == nil && n.Base() == base {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	out := make([]TableStats, 0, len(names))
	for _, name := range names {
		out = append(out, s.statsOfLocked(name))
	}
	s.mu.Unlock()
	for i := range out {
		out[i].LagMessages = s.lag(out[i].Topic)
	}
	return out
}

func (s *Service) statsOfLocked(name string) TableStats {
	st := s.stats[name]
	n, _ := topics.ParseName(name)
	b := n.Base()
	ts := TableStats{Topic: name, Table: Ident{b.Tenant, b.Namespace, b.Local}.String()}
	_, ts.Running = s.writers[name]
	st.mu.Lock()
	ts.LastCommittedEntry = st.committed.String()
	if !st.lastCommit.IsZero() {
		ts.LastCommitTime = st.lastCommit.UTC().Format(time.RFC3339Nano)
	}
	ts.LastError = st.lastError
	if !st.lastErrorAt.IsZero() {
		ts.LastErrorTime = st.lastErrorAt.UTC().Format(time.RFC3339Nano)
	}
	st.mu.Unlock()
	ts.Commits, ts.CommitErrors = st.commits.Load(), st.commitErrors.Load()
	ts.RowsCommitted, ts.DeadLetters, ts.Gaps = st.rows.Load(), st.deadLetters.Load(), st.gaps.Load()
	return ts
}

// metrics exports the writers' stats (names in doc.go, "Metrics").
type metrics struct {
	s      *Service
	commit prometheus.Histogram
	descs  map[string]*prometheus.Desc
	once   sync.Once
}

func newMetrics(s *Service, reg prometheus.Registerer) *metrics {
	m := &metrics{s: s, descs: map[string]*prometheus.Desc{}}
	if reg == nil {
		return m
	}
	m.commit = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name: "pulsar_iceberg_commit_latency_seconds", Help: "Time of one table commit (data files and position)",
		Buckets: prometheus.ExponentialBuckets(0.01, 2, 12),
	})
	for name, help := range metricHelp {
		m.descs[name] = prometheus.NewDesc(name, help, []string{"topic", "table"}, nil)
	}
	reg.MustRegister(m.commit, m)
	return m
}

var metricHelp = map[string]string{
	"pulsar_iceberg_lag_messages":        "Messages of the topic not yet committed into its Iceberg table",
	"pulsar_iceberg_commits_total":       "Commits of the topic's rows into its Iceberg table",
	"pulsar_iceberg_commit_errors_total": "Failed commits into the Iceberg table",
	"pulsar_iceberg_rows_total":          "Rows committed into the Iceberg table",
	"pulsar_iceberg_dead_letters_total":  "Records that could not be converted, sent to the dead-letter topic",
	"pulsar_iceberg_gaps_total":          "Times the writer found entries trimmed before it committed them",
	"pulsar_iceberg_last_commit_seconds": "Unix time of the last commit into the Iceberg table",
}

func (m *metrics) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range m.descs {
		ch <- d
	}
}

func (m *metrics) Collect(ch chan<- prometheus.Metric) {
	s := m.s
	s.mu.Lock()
	all := make([]TableStats, 0, len(s.stats))
	var lastCommit []float64
	for name, st := range s.stats {
		all = append(all, s.statsOfLocked(name))
		st.mu.Lock()
		lastCommit = append(lastCommit, float64(st.lastCommit.UnixMilli())/1000)
		st.mu.Unlock()
	}
	s.mu.Unlock()
	for i, ts := range all {
		lag := s.lag(ts.Topic)
		emit := func(name string, typ prometheus.ValueType, v float64) {
			ch <- prometheus.MustNewConstMetric(m.descs[name], typ, v, ts.Topic, ts.Table)
		}
		if lag >= 0 {
			emit("pulsar_iceberg_lag_messages", prometheus.GaugeValue, float64(lag))
		}
		emit("pulsar_iceberg_commits_total", prometheus.CounterValue, float64(ts.Commits))
		emit("pulsar_iceberg_commit_errors_total", prometheus.CounterValue, float64(ts.CommitErrors))
		emit("pulsar_iceberg_rows_total", prometheus.CounterValue, float64(ts.RowsCommitted))
		emit("pulsar_iceberg_dead_letters_total", prometheus.CounterValue, float64(ts.DeadLetters))
		emit("pulsar_iceberg_gaps_total", prometheus.CounterValue, float64(ts.Gaps))
		if lastCommit[i] > 0 {
			emit("pulsar_iceberg_last_commit_seconds", prometheus.GaugeValue, lastCommit[i])
		}
	}
}
