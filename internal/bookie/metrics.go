package bookie

import (
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/magnetar-io/magnetar/internal/bookieproto"
)

// metrics are the server's Prometheus series. Names follow BookKeeper's server request stats
// (bookkeeper_server_ADD_ENTRY_REQUEST and friends) as labels of one family, under bookie_:
//
//	bookie_server_requests_total{op,status}        requests answered, by op and status
//	bookie_server_request_latency_seconds{op,success}  read-to-response-queued latency
//	bookie_server_connections                      open client connections
//	bookie_server_rejected_connections_total       connections closed at accept (maxConnections)
//	bookie_server_malformed_frames_total           connections closed for a malformed frame
//	bookie_registration_state                      0 unregistered, 1 writable, 2 read-only
//
// The per-op series are resolved once here so the request path does no label hashing.
type metrics struct {
	requests      map[bookieproto.Op]map[bookieproto.Status]prometheus.Counter
	latency       map[bookieproto.Op][2]prometheus.Observer // [failed, succeeded]
	connections   prometheus.Gauge
	rejectedConns prometheus.Counter
	malformed     prometheus.Counter
	registration  prometheus.Gauge
}

// latencyBuckets span 50 µs to ~13 s: group-committed adds sit in the low milliseconds,
// long polls at their timeout.
var latencyBuckets = prometheus.ExponentialBuckets(50e-6, 2, 19)

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	requests := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "bookie_server_requests_total", Help: "Bookie protocol requests answered, by op and status.",
	}, []string{"op", "status"})
	latency := prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "bookie_server_request_latency_seconds", Help: "Time from reading a request to queueing its response (adds: including the journal fsync).",
		Buckets: latencyBuckets,
	}, []string{"op", "success"})
	m := &metrics{
		requests: map[bookieproto.Op]map[bookieproto.Status]prometheus.Counter{},
		latency:  map[bookieproto.Op][2]prometheus.Observer{},
		connections: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "bookie_server_connections", Help: "Open client connections.",
		}),
		rejectedConns: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "bookie_server_rejected_connections_total", Help: "Connections closed at accept because maxConnections was reached.",
		}),
		malformed: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "bookie_server_malformed_frames_total", Help: "Connections closed because a frame was malformed or too large.",
		}),
		registration: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "bookie_registration_state", Help: "Registration in the metadata store: 0 none, 1 writable, 2 read-only.",
		}),
	}
	for _, op := range bookieproto.Ops {
		byStatus := map[bookieproto.Status]prometheus.Counter{}
		for _, st := range bookieproto.Statuses() {
			byStatus[st] = requests.WithLabelValues(op.String(), st.String())
		}
		m.requests[op] = byStatus
		m.latency[op] = [2]prometheus.Observer{latency.WithLabelValues(op.String(), "false"), latency.WithLabelValues(op.String(), "true")}
	}
	if reg != nil {
		for _, c := range []prometheus.Collector{requests, latency, m.connections, m.rejectedConns, m.malformed, m.registration} {
			if err := reg.Register(c); err != nil {
				return nil, fmt.Errorf("bookie: registering metrics: %w", err)
			}
		}
	}
	return m, nil
}

func (m *metrics) observe(op bookieproto.Op, st bookieproto.Status, d time.Duration) {
	byStatus, ok := m.requests[op]
	if !ok {
		return // unknown op: answered with BAD_REQUEST, not worth a series
	}
	if c, ok := byStatus[st]; ok {
		c.Inc()
	}
	ok = st == bookieproto.StatusOK
	i := 0
	if ok {
		i = 1
	}
	m.latency[op][i].Observe(d.Seconds())
}
