package admin

import (
	"context"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// topicCollector exports Pulsar's per-topic gauges (names and labels as Pulsar's
// /metrics, so existing dashboards work) by walking the broker's loaded topics at scrape
// time: nothing is kept between scrapes, so the cost is paid only when scraped.
type topicCollector struct {
	broker    Broker
	cluster   string
	namespace bool // aggregate per namespace instead of per topic
	descs     map[string]*prometheus.Desc
}

// topicMetrics are the gauges per topic (or namespace); subscription ones add a label.
var topicMetrics = []struct{ name, help string }{
	{"pulsar_topics_count", "Topics loaded on this broker."},
	{"pulsar_producers_count", "Connected producers."},
	{"pulsar_consumers_count", "Connected consumers."},
	{"pulsar_subscriptions_count", "Subscriptions."},
	{"pulsar_storage_size", "Bytes stored for the topic (all ledgers)."},
	{"pulsar_storage_backlog_size", "Bytes not yet acknowledged by the slowest subscription."},
	{"pulsar_msg_backlog", "Entries not yet acknowledged, summed over subscriptions."},
}

func newTopicCollector(b Broker, cluster string, namespaceOnly bool) *topicCollector {
	c := &topicCollector{broker: b, cluster: cluster, namespace: namespaceOnly, descs: map[string]*prometheus.Desc{}}
	labels := []string{"cluster", "namespace"}
	if !namespaceOnly {
		labels = append(labels, "topic")
	}
	for _, m := range topicMetrics {
		c.descs[m.name] = prometheus.NewDesc(m.name, m.help, labels, nil)
	}
	subLabels := append(append([]string{}, labels...), "subscription")
	c.descs["pulsar_subscription_back_log"] = prometheus.NewDesc("pulsar_subscription_back_log", "Entries the subscription has not acknowledged.", subLabels, nil)
	c.descs["pulsar_subscription_consumers_count"] = prometheus.NewDesc("pulsar_subscription_consumers_count", "Consumers of the subscription.", subLabels, nil)
	return c
}

func (c *topicCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range c.descs {
		ch <- d
	}
}

// key identifies one series group: the namespace, plus the topic unless aggregated.
type seriesKey struct{ ns, topic string }

func (c *topicCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	vals := map[seriesKey]map[string]float64{}
	subs := map[seriesKey]map[string][2]float64{} // subscription -> backlog, consumers
	for topic, st := range c.broker.LoadedTopicStats(ctx) {
		k := seriesKey{ns: namespaceOf(topic)}
		if !c.namespace {
			k.topic = topic
		}
		v := vals[k]
		if v == nil {
			v = map[string]float64{}
			vals[k] = v
			subs[k] = map[string][2]float64{}
		}
		v["pulsar_topics_count"]++
		v["pulsar_producers_count"] += float64(len(st.Publishers))
		v["pulsar_subscriptions_count"] += float64(len(st.Subscriptions))
		v["pulsar_storage_size"] += float64(st.StorageSize)
		v["pulsar_storage_backlog_size"] += float64(st.BacklogSize)
		for name, s := range st.Subscriptions {
			v["pulsar_consumers_count"] += float64(len(s.Consumers))
			v["pulsar_msg_backlog"] += float64(s.MsgBacklog)
			cur := subs[k][name]
			subs[k][name] = [2]float64{cur[0] + float64(s.MsgBacklog), cur[1] + float64(len(s.Consumers))}
		}
	}
	for k, v := range vals {
		labels := []string{c.cluster, k.ns}
		if !c.namespace {
			labels = append(labels, k.topic)
		}
		for _, m := range topicMetrics {
			ch <- prometheus.MustNewConstMetric(c.descs[m.name], prometheus.GaugeValue, v[m.name], labels...)
		}
		for name, s := range subs[k] {
			sl := append(append([]string{}, labels...), name)
			ch <- prometheus.MustNewConstMetric(c.descs["pulsar_subscription_back_log"], prometheus.GaugeValue, s[0], sl...)
			ch <- prometheus.MustNewConstMetric(c.descs["pulsar_subscription_consumers_count"], prometheus.GaugeValue, s[1], sl...)
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
