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
// With exposeTopicLevelMetricsInPrometheus off, the per-topic series are summed per
// namespace and carry no topic label.
type topicCollector struct {
	broker  Broker
	cluster string
	dynamic DynamicConfig
}

var (
	descTopics = prometheus.NewDesc("pulsar_topics_count", "Topics loaded on this broker.",
		[]string{"cluster", "namespace"}, nil)
	descBacklog = prometheus.NewDesc("pulsar_msg_backlog", "Entries not yet acknowledged, summed over the topic's subscriptions.",
		[]string{"cluster", "namespace", "topic"}, nil)
	descBacklogSize = prometheus.NewDesc("pulsar_storage_backlog_size", "Bytes not yet acknowledged by the slowest subscription.",
		[]string{"cluster", "namespace", "topic"}, nil)
	// The same names per namespace (exposeTopicLevelMetricsInPrometheus=false).
	descNsBacklog = prometheus.NewDesc("pulsar_msg_backlog", "Entries not yet acknowledged, summed over the namespace's topics.",
		[]string{"cluster", "namespace"}, nil)
	descNsBacklogSize = prometheus.NewDesc("pulsar_storage_backlog_size", "Bytes not yet acknowledged, summed over the namespace's topics.",
		[]string{"cluster", "namespace"}, nil)
)

// Describe sends nothing: the collector is unchecked, because the same names come with a
// topic label or without one depending on exposeTopicLevelMetricsInPrometheus, which a
// checked collector may not do (each scrape still has one label set per name).
func (c *topicCollector) Describe(chan<- *prometheus.Desc) {}

func (c *topicCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	perTopic := topicLevelMetrics(c.dynamic)
	type nsSums struct{ topics, backlog, backlogSize int64 }
	perNamespace := map[string]*nsSums{}
	for topic, st := range c.broker.LoadedTopicStats(ctx) {
		ns := namespaceOf(topic)
		sum := perNamespace[ns]
		if sum == nil {
			sum = &nsSums{}
			perNamespace[ns] = sum
		}
		sum.topics++
		var backlog int64
		for _, s := range st.Subscriptions {
			backlog += s.MsgBacklog
		}
		sum.backlog += backlog
		sum.backlogSize += st.BacklogSize
		if perTopic {
			ch <- prometheus.MustNewConstMetric(descBacklog, prometheus.GaugeValue, float64(backlog), c.cluster, ns, topic)
			ch <- prometheus.MustNewConstMetric(descBacklogSize, prometheus.GaugeValue, float64(st.BacklogSize), c.cluster, ns, topic)
		}
	}
	for ns, sum := range perNamespace {
		ch <- prometheus.MustNewConstMetric(descTopics, prometheus.GaugeValue, float64(sum.topics), c.cluster, ns)
		if !perTopic {
			ch <- prometheus.MustNewConstMetric(descNsBacklog, prometheus.GaugeValue, float64(sum.backlog), c.cluster, ns)
			ch <- prometheus.MustNewConstMetric(descNsBacklogSize, prometheus.GaugeValue, float64(sum.backlogSize), c.cluster, ns)
		}
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
