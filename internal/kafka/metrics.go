package kafka

import (
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// metrics are the Kafka front end's Prometheus series. Names follow the broker's
// pulsar_* convention with a kafka_ infix:
//
//	pulsar_kafka_requests_total{api}                   requests answered, per API
//	pulsar_kafka_request_latency_seconds{api}          request to response, per API
//	pulsar_kafka_malformed_requests_total              connections closed for a bad request
//	pulsar_kafka_group_lag{group,topic,partition}      high watermark - committed offset
//	pulsar_kafka_connections                           open connections
type metrics struct {
	s         *Server
	requests  *prometheus.CounterVec
	latency   *prometheus.HistogramVec
	malformed prometheus.Counter
	byKey     [kmsg.MaxKey + 1]struct {
		count prometheus.Counter
		lat   prometheus.Observer
	}

	lagDesc  *prometheus.Desc
	connDesc *prometheus.Desc
	mu       sync.Mutex
	// committed is the last offset committed through this broker per group and partition,
	// for the lag gauge (the source of truth is the partition's subscription).
	committed map[lagKey]int64
}

type lagKey struct {
	group, topic string
	partition    int32
	log          string // the Pulsar partition name, to read its high watermark
}

func newMetrics(s *Server, reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		s: s,
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "pulsar_kafka_requests_total", Help: "Kafka protocol requests answered, by API",
		}, []string{"api"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "pulsar_kafka_request_latency_seconds", Help: "Kafka protocol request latency (request read to response queued), by API",
			Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30},
		}, []string{"api"}),
		malformed: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "pulsar_kafka_malformed_requests_total", Help: "Kafka connections closed because of a malformed or unsupported request",
		}),
		lagDesc: prometheus.NewDesc("pulsar_kafka_group_lag", "Kafka consumer group lag: high watermark minus committed offset",
			[]string{"group", "topic", "partition"}, nil),
		connDesc:  prometheus.NewDesc("pulsar_kafka_connections", "open Kafka protocol connections", nil, nil),
		committed: map[lagKey]int64{},
	}
	for k := range m.byKey {
		name := kmsg.NameForKey(int16(k))
		if name == "" {
			continue
		}
		m.byKey[k].count = m.requests.WithLabelValues(name)
		m.byKey[k].lat = m.latency.WithLabelValues(name)
	}
	if reg != nil {
		for _, c := range []prometheus.Collector{m.requests, m.latency, m.malformed, m} {
			if err := reg.Register(c); err != nil {
				return nil, err
			}
		}
	}
	return m, nil
}

func (m *metrics) observe(key int16, d time.Duration) {
	if key < 0 || int(key) >= len(m.byKey) || m.byKey[key].count == nil {
		return
	}
	m.byKey[key].count.Inc()
	m.byKey[key].lat.Observe(d.Seconds())
}

func (m *metrics) committedOffset(k lagKey, offset int64) {
	m.mu.Lock()
	m.committed[k] = offset
	m.mu.Unlock()
}

func (m *metrics) forgetGroup(group string) {
	m.mu.Lock()
	for k := range m.committed {
		if k.group == group {
			delete(m.committed, k)
		}
	}
	m.mu.Unlock()
}

// Describe implements prometheus.Collector.
func (m *metrics) Describe(ch chan<- *prometheus.Desc) {
	ch <- m.lagDesc
	ch <- m.connDesc
}

// Collect implements prometheus.Collector: lag from the partitions open on this broker.
func (m *metrics) Collect(ch chan<- prometheus.Metric) {
	m.s.mu.Lock()
	conns := len(m.s.conns)
	logs := make(map[string]*partition, len(m.s.logs))
	for k, v := range m.s.logs {
		logs[k] = v
	}
	m.s.mu.Unlock()
	ch <- prometheus.MustNewConstMetric(m.connDesc, prometheus.GaugeValue, float64(conns))
	m.mu.Lock()
	defer m.mu.Unlock()
	for k, off := range m.committed {
		p := logs[k.log]
		if p == nil {
			continue
		}
		lag := max(p.log.HighWatermark()-off, 0)
		ch <- prometheus.MustNewConstMetric(m.lagDesc, prometheus.GaugeValue, float64(lag),
			k.group, k.topic, strconv.Itoa(int(k.partition)))
	}
}
