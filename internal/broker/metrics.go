package broker

import (
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
)

// metrics are the broker-wide series plus a collector that walks the loaded topics at
// scrape time (as Pulsar does), so per-topic series cost nothing between scrapes. Names
// and labels are Pulsar's, so existing dashboards and alerts work.
type metrics struct {
	connections prometheus.Gauge
	msgsIn      prometheus.Counter
	bytesIn     prometheus.Counter
	msgsOut     prometheus.Counter
	bytesOut    prometheus.Counter
}

// topicCounters are a topic's running totals, updated on the hot paths with atomics.
type topicCounters struct {
	msgsIn, bytesIn, msgsOut, bytesOut atomic.Int64
}

func newMetrics(s *Server, reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		connections: prometheus.NewGauge(prometheus.GaugeOpts{Name: "pulsar_active_connections", Help: "Client connections open on this broker."}),
		msgsIn:      prometheus.NewCounter(prometheus.CounterOpts{Name: "pulsar_broker_in_messages_total", Help: "Messages published to this broker."}),
		bytesIn:     prometheus.NewCounter(prometheus.CounterOpts{Name: "pulsar_broker_in_bytes_total", Help: "Bytes published to this broker."}),
		msgsOut:     prometheus.NewCounter(prometheus.CounterOpts{Name: "pulsar_broker_out_messages_total", Help: "Messages dispatched to consumers."}),
		bytesOut:    prometheus.NewCounter(prometheus.CounterOpts{Name: "pulsar_broker_out_bytes_total", Help: "Bytes dispatched to consumers."}),
	}
	if reg != nil {
		for _, c := range []prometheus.Collector{m.connections, m.msgsIn, m.bytesIn, m.msgsOut, m.bytesOut, &topicCollector{s}} {
			if err := reg.Register(c); err != nil {
				return nil, err
			}
		}
	}
	return m, nil
}

var (
	topicLabels    = []string{"cluster", "namespace", "topic"}
	subLabels      = []string{"cluster", "namespace", "topic", "subscription"}
	descInMsgs     = prometheus.NewDesc("pulsar_in_messages_total", "Messages published to the topic.", topicLabels, nil)
	descInBytes    = prometheus.NewDesc("pulsar_in_bytes_total", "Bytes published to the topic.", topicLabels, nil)
	descOutMsgs    = prometheus.NewDesc("pulsar_out_messages_total", "Messages dispatched from the topic.", topicLabels, nil)
	descOutBytes   = prometheus.NewDesc("pulsar_out_bytes_total", "Bytes dispatched from the topic.", topicLabels, nil)
	descStorage    = prometheus.NewDesc("pulsar_storage_size", "Bytes stored for the topic.", topicLabels, nil)
	descProducers  = prometheus.NewDesc("pulsar_producers_count", "Producers connected to the topic.", topicLabels, nil)
	descSubs       = prometheus.NewDesc("pulsar_subscriptions_count", "Subscriptions of the topic.", topicLabels, nil)
	descConsumers  = prometheus.NewDesc("pulsar_consumers_count", "Consumers connected to the topic.", topicLabels, nil)
	descSubBacklog = prometheus.NewDesc("pulsar_subscription_back_log", "Unacknowledged entries of the subscription.", subLabels, nil)
	descSubUnacked = prometheus.NewDesc("pulsar_subscription_unacked_messages", "Messages dispatched and not acknowledged.", subLabels, nil)
)

// topicCollector reports per-topic series for the topics loaded on this broker.
type topicCollector struct{ s *Server }

func (c *topicCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descInMsgs, descInBytes, descOutMsgs, descOutBytes, descStorage,
		descProducers, descSubs, descConsumers, descSubBacklog, descSubUnacked} {
		ch <- d
	}
}

func (c *topicCollector) Collect(ch chan<- prometheus.Metric) {
	cluster := c.s.cfg.ClusterName
	for _, t := range c.s.loadedTopics() {
		lv := []string{cluster, t.name.NamespaceName(), t.full}
		counter := func(d *prometheus.Desc, v int64) {
			ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v), lv...)
		}
		gauge := func(d *prometheus.Desc, v float64) {
			ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, lv...)
		}
		counter(descInMsgs, t.counters.msgsIn.Load())
		counter(descInBytes, t.counters.bytesIn.Load())
		counter(descOutMsgs, t.counters.msgsOut.Load())
		counter(descOutBytes, t.counters.bytesOut.Load())
		if t.log != nil {
			gauge(descStorage, float64(t.log.storageSize()))
		}
		t.mu.Lock()
		gauge(descProducers, float64(len(t.producers)))
		gauge(descSubs, float64(len(t.subs)))
		subs := make([]*subscription, 0, len(t.subs))
		for _, s := range t.subs {
			subs = append(subs, s)
		}
		t.mu.Unlock()
		consumers := 0
		for _, s := range subs {
			slv := append(append([]string(nil), lv...), s.name)
			if s.cursor != nil {
				ch <- prometheus.MustNewConstMetric(descSubBacklog, prometheus.GaugeValue, float64(s.cursor.backlog()), slv...)
			}
			s.mu.Lock()
			consumers += len(s.consumers)
			unacked := s.unacked
			s.mu.Unlock()
			ch <- prometheus.MustNewConstMetric(descSubUnacked, prometheus.GaugeValue, float64(unacked), slv...)
		}
		gauge(descConsumers, float64(consumers))
	}
}
