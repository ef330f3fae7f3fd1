package offload

import (
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Metrics counts offloads and offloaded reads per topic under Pulsar's
// LedgerOffloaderStats names (brk_ledgeroffloader_*), labels namespace and topic. A nil
// *Metrics records nothing. Register it with a prometheus.Registerer.
type Metrics struct {
	offloadError      *prometheus.CounterVec
	offloadBytes      *prometheus.CounterVec
	readOffloadError  *prometheus.CounterVec
	readOffloadBytes  *prometheus.CounterVec
	writeStorageError *prometheus.CounterVec
	deleteOps         *prometheus.CounterVec
	indexLatency      *prometheus.SummaryVec
	dataLatency       *prometheus.SummaryVec
	offloadRate       *prometheus.Desc
	readRate          *prometheus.Desc

	mu   sync.Mutex
	rate map[string]*rateState // per topic: bytes and their last sample
}

type rateState struct {
	offloaded, read         float64
	lastOffloaded, lastRead float64
	lastAt                  time.Time
}

var metricLabels = []string{"namespace", "topic"}

// NewMetrics returns an empty set of counters.
func NewMetrics() *Metrics {
	counter := func(name, help string, extra ...string) *prometheus.CounterVec {
		return prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, append(append([]string(nil), metricLabels...), extra...))
	}
	summary := func(name, help string) *prometheus.SummaryVec {
		return prometheus.NewSummaryVec(prometheus.SummaryOpts{Name: name, Help: help,
			Objectives: map[float64]float64{0.5: 0.05, 0.95: 0.01, 0.99: 0.001}, MaxAge: time.Minute}, metricLabels)
	}
	return &Metrics{
		offloadError:      counter("brk_ledgeroffloader_offload_error", "ledger offloads that failed"),
		offloadBytes:      counter("brk_ledgeroffloader_offload_bytes", "bytes written to tiered storage by completed offloads"),
		readOffloadError:  counter("brk_ledgeroffloader_read_offload_error", "reads of offloaded ledgers that failed"),
		readOffloadBytes:  counter("brk_ledgeroffloader_read_offload_bytes", "entry bytes read from offloaded ledgers"),
		writeStorageError: counter("brk_ledgeroffloader_write_storage_error", "writes to tiered storage that failed"),
		deleteOps:         counter("brk_ledgeroffloader_delete_offload_ops", "deletions of offloaded ledgers", "status"),
		indexLatency:      summary("brk_ledgeroffloader_read_offload_index_latency", "time to open an offloaded ledger's index, in microseconds"),
		dataLatency:       summary("brk_ledgeroffloader_read_offload_data_latency", "time of one read of an offloaded ledger, in microseconds"),
		offloadRate:       prometheus.NewDesc("brk_ledgeroffloader_offload_rate", "bytes per second offloaded since the previous scrape", metricLabels, nil),
		readRate:          prometheus.NewDesc("brk_ledgeroffloader_read_offload_rate", "bytes per second read from offloaded ledgers since the previous scrape", metricLabels, nil),
		rate:              map[string]*rateState{},
	}
}

// labels maps a managed-ledger name "tenant/ns/persistent/topic" onto Pulsar's labels.
func labels(topic string) []string {
	p := strings.SplitN(topic, "/", 4)
	if len(p) == 4 {
		return []string{p[0] + "/" + p[1], p[2] + "://" + p[0] + "/" + p[1] + "/" + p[3]}
	}
	return []string{"", topic}
}

func (m *Metrics) addRate(topic string, offloaded, read int64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	r := m.rate[topic]
	if r == nil {
		r = &rateState{lastAt: time.Now()}
		m.rate[topic] = r
	}
	r.offloaded += float64(offloaded)
	r.read += float64(read)
}

func (m *Metrics) offloaded(topic string, bytes int64) {
	if m == nil {
		return
	}
	m.offloadBytes.WithLabelValues(labels(topic)...).Add(float64(bytes))
	m.addRate(topic, bytes, 0)
}

func (m *Metrics) offloadFailed(topic string) {
	if m != nil {
		m.offloadError.WithLabelValues(labels(topic)...).Inc()
	}
}

func (m *Metrics) storageFailed(topic string) {
	if m != nil {
		m.writeStorageError.WithLabelValues(labels(topic)...).Inc()
	}
}

func (m *Metrics) readFailed(topic string) {
	if m != nil {
		m.readOffloadError.WithLabelValues(labels(topic)...).Inc()
	}
}

func (m *Metrics) indexRead(topic string, d time.Duration) {
	if m != nil {
		m.indexLatency.WithLabelValues(labels(topic)...).Observe(float64(d.Microseconds()))
	}
}

func (m *Metrics) dataRead(topic string, bytes int64, d time.Duration) {
	if m == nil {
		return
	}
	m.readOffloadBytes.WithLabelValues(labels(topic)...).Add(float64(bytes))
	m.dataLatency.WithLabelValues(labels(topic)...).Observe(float64(d.Microseconds()))
	m.addRate(topic, 0, bytes)
}

func (m *Metrics) deleted(topic string, ok bool) {
	if m == nil {
		return
	}
	status := "success"
	if !ok {
		status = "failure"
	}
	m.deleteOps.WithLabelValues(append(labels(topic), status)...).Inc()
}

func (m *Metrics) collectors() []prometheus.Collector {
	return []prometheus.Collector{m.offloadError, m.offloadBytes, m.readOffloadError, m.readOffloadBytes,
		m.writeStorageError, m.deleteOps, m.indexLatency, m.dataLatency}
}

// Describe implements prometheus.Collector.
func (m *Metrics) Describe(ch chan<- *prometheus.Desc) {
	for _, c := range m.collectors() {
		c.Describe(ch)
	}
	ch <- m.offloadRate
	ch <- m.readRate
}

// Collect implements prometheus.Collector; the rate gauges cover the time since the
// previous scrape.
func (m *Metrics) Collect(ch chan<- prometheus.Metric) {
	for _, c := range m.collectors() {
		c.Collect(ch)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	now := time.Now()
	for topic, r := range m.rate {
		secs := now.Sub(r.lastAt).Seconds()
		if secs <= 0 {
			secs = 1
		}
		l := labels(topic)
		ch <- prometheus.MustNewConstMetric(m.offloadRate, prometheus.GaugeValue, (r.offloaded-r.lastOffloaded)/secs, l...)
		ch <- prometheus.MustNewConstMetric(m.readRate, prometheus.GaugeValue, (r.read-r.lastRead)/secs, l...)
		r.lastOffloaded, r.lastRead, r.lastAt = r.offloaded, r.read, now
	}
}
