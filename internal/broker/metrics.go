package broker

import "github.com/prometheus/client_golang/prometheus"

// metrics are the front end's own series; the message and topic series are the topic
// service's (internal/topics/metrics.go). Names are Pulsar's.
type metrics struct {
	connections prometheus.Gauge
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		connections: prometheus.NewGauge(prometheus.GaugeOpts{Name: "pulsar_active_connections", Help: "Client connections open on this broker."}),
	}
	if reg != nil {
		if err := reg.Register(m.connections); err != nil {
			return nil, err
		}
	}
	return m, nil
}
