package admin

import (
	"context"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// topicCollector adds the Pulsar series the broker's own collector (internal/broker/
// metrics.go: in/out counters, storage size, producers, consumers, subscriptions,
// subscription backlog of attached subscriptions) does not export: the backlog of a topic
// summed over all its durable subscriptions, idle ones included, and the topic count per
// namespace. It walks the loaded topics at scrape time and keeps nothing between scrapes.
// Names and labels are Pulsar's, so existing dashboards work; a name must never be exported
// by both collectors (the registries are merged and a duplicate series fails the scrape).
type topicCollector struct {
	broker  Broker
	cluster string
}

var (
	descTopics = prometheus.NewDesc("pulsar_topics_count", "Topics loaded on this broker.",
		[]string{"cluster", "namespace"}, nil)
	descBacklog = prometheus.NewDesc("pulsar_msg_backlog", "Entries not yet acknowledged, summed over the topic's subscriptions.",
		[]string{"cluster", "namespace", "topic"}, nil)
	descBacklogSize = prometheus.NewDesc("pulsar_storage_backlog_size", "Bytes not yet acknowledged by the slowest subscription.",
		[]string{"cluster", "namespace", "topic"}, nil)
)

func (c *topicCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- descTopics
	ch <- descBacklog
	ch <- descBacklogSize
}

func (c *topicCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	perNamespace := map[string]int{}
	for topic, st := range c.broker.LoadedTopicStats(ctx) {
		ns := namespaceOf(topic)
		perNamespace[ns]++
		var backlog int64
		for _, s := range st.Subscriptions {
			backlog += s.MsgBacklog
		}
		ch <- prometheus.MustNewConstMetric(descBacklog, prometheus.GaugeValue, float64(backlog), c.cluster, ns, topic)
		ch <- prometheus.MustNewConstMetric(descBacklogSize, prometheus.GaugeValue, float64(st.BacklogSize), c.cluster, ns, topic)
	}
	for ns, n := range perNamespace {
		ch <- prometheus.MustNewConstMetric(descTopics, prometheus.GaugeValue, float64(n), c.cluster, ns)
	}
}

// namespaceOf is "tenant/ns" of a full topic name.
func namespaceOf(topic string) string {
	_, rest, _ := strings.Cut(topic, "://")
	parts := strings.Split(rest, "/")
	if len(parts) < 3 {
		return rest
	}
	return strings.Join(parts[:len(parts)-1], "/")
}
