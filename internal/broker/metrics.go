package broker

import "github.com/prometheus/client_golang/prometheus"

// metrics are the broker-wide counters, under Pulsar's metric names where one exists.
type metrics struct {
	connections prometheus.Gauge
	msgsIn      prometheus.Counter
	bytesIn     prometheus.Counter
	msgsOut     prometheus.Counter
	bytesOut    prometheus.Counter
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		connections: prometheus.NewGauge(prometheus.GaugeOpts{Name: "pulsar_active_connections", Help: "Client connections open on this broker."}),
		msgsIn:      prometheus.NewCounter(prometheus.CounterOpts{Name: "pulsar_broker_in_messages_total", Help: "Messages published to this broker."}),
		bytesIn:     prometheus.NewCounter(prometheus.CounterOpts{Name: "pulsar_broker_in_bytes_total", Help: "Bytes published to this broker."}),
		msgsOut:     prometheus.NewCounter(prometheus.CounterOpts{Name: "pulsar_broker_out_messages_total", Help: "Messages dispatched to consumers."}),
		bytesOut:    prometheus.NewCounter(prometheus.CounterOpts{Name: "pulsar_broker_out_bytes_total", Help: "Bytes dispatched to consumers."}),
	}
	if reg != nil {
		for _, c := range []prometheus.Collector{m.connections, m.msgsIn, m.bytesIn, m.msgsOut, m.bytesOut} {
			if err := reg.Register(c); err != nil {
				return nil, err
			}
		}
	}
	return m, nil
}
