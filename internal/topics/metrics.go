package topics

import (
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/magnetar-io/magnetar/internal/txn"
)

// metrics are the broker-wide message series plus a collector that walks the loaded topics
// at scrape time (as Pulsar does), so per-topic series cost nothing between scrapes. Names
// and labels are Pulsar's, so existing dashboards and alerts work. (Front ends export
// their own connection series.)
type metrics struct {
	msgsIn   prometheus.Counter
	bytesIn  prometheus.Counter
	msgsOut  prometheus.Counter
	bytesOut prometheus.Counter
	// publishLatency is SEND handed to the topic to entry stored (what the receipt waits
	// for, without publish throttling), in ms.
	publishLatency prometheus.Histogram
	compaction     compactionMetrics // compaction_metrics.go
}

// topicCounters are a topic's running totals, updated on the hot paths with atomics.
type topicCounters struct {
	msgsIn, bytesIn, msgsOut, bytesOut atomic.Int64
	writeLatency                       latencyBuckets
}

func newMetrics(s *Service, reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		msgsIn:   prometheus.NewCounter(prometheus.CounterOpts{Name: "pulsar_broker_in_messages_total", Help: "Messages published to this broker."}),
		bytesIn:  prometheus.NewCounter(prometheus.CounterOpts{Name: "pulsar_broker_in_bytes_total", Help: "Bytes published to this broker."}),
		msgsOut:  prometheus.NewCounter(prometheus.CounterOpts{Name: "pulsar_broker_out_messages_total", Help: "Messages dispatched to consumers."}),
		bytesOut: prometheus.NewCounter(prometheus.CounterOpts{Name: "pulsar_broker_out_bytes_total", Help: "Bytes dispatched to consumers."}),
		publishLatency: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "pulsar_broker_publish_latency",
			Help: "Milliseconds from a SEND handed to its topic (after publish throttling) to its entry stored (persistent topics).", Buckets: latencyBoundsMs[:]}),
	}
	m.compaction = newCompactionMetrics()
	if reg != nil {
		for _, c := range append([]prometheus.Collector{m.msgsIn, m.bytesIn, m.msgsOut, m.bytesOut, m.publishLatency, &topicCollector{s}}, m.compaction.collectors()...) {
			if err := reg.Register(c); err != nil {
				return nil, err
			}
		}
	}
	return m, nil
}

// topicCollector reports per-topic series for the topics loaded on this broker, or with
// exposeTopicLevelMetricsInPrometheus off the same names summed per namespace without the
// topic label (and no subscription series), as Pulsar does for many-topic deployments.
type topicCollector struct{ s *Service }

// Describe sends nothing: the collector is unchecked because a name's label set depends on
// the (dynamic) topic-level switch; each scrape still has one label set per name.
func (c *topicCollector) Describe(chan<- *prometheus.Desc) {}

// topicSample is one topic's (or, summed, one namespace's) values at scrape time.
type topicSample struct {
	msgsIn, bytesIn, msgsOut, bytesOut int64
	storage, offloaded                 int64
	producers, subs, consumers         int
	latency                            latencySnapshot
	rates                              rateSample
	// txn and txnAcks are the pulsar_txn_tb_* and (summed per namespace) pulsar_txn_tp_*
	// values; txnUsed tells whether any topic summed here saw a transaction.
	txn     txn.BufferSample
	txnAcks txn.PendingAckSample
	txnUsed bool
}

func (a *topicSample) add(b *topicSample) {
	a.msgsIn += b.msgsIn
	a.bytesIn += b.bytesIn
	a.msgsOut += b.msgsOut
	a.bytesOut += b.bytesOut
	a.storage += b.storage
	a.offloaded += b.offloaded
	a.producers += b.producers
	a.subs += b.subs
	a.consumers += b.consumers
	a.latency.add(&b.latency)
	a.rates.add(b.rates)
	a.txn.Add(b.txn)
	a.txnAcks.Add(b.txnAcks)
}

func (c *topicCollector) Collect(ch chan<- prometheus.Metric) {
	cluster := c.s.cfg.ClusterName
	perTopic := c.s.dyn.topicLevel.Load()
	perNamespace := map[string]*topicSample{}
	now := time.Now()
	for _, t := range c.s.LoadedTopics() {
		ns := t.name.NamespaceName()
		smp := topicSample{
			msgsIn: t.counters.msgsIn.Load(), bytesIn: t.counters.bytesIn.Load(),
			msgsOut: t.counters.msgsOut.Load(), bytesOut: t.counters.bytesOut.Load(),
			latency: t.counters.writeLatency.snapshot(),
			rates:   topicRates(t, now),
		}
		if t.log != nil {
			smp.storage = t.log.storageSize()
			smp.offloaded = t.log.ml.OffloadedSize()
		}
		// Transaction series only for topics that saw a transaction (a state log): the
		// others would add six zero series each.
		txnUsed := t.txn != nil && t.txn.Used()
		if txnUsed {
			smp.txn = t.txn.Buffer().Sample()
		}
		t.mu.Lock()
		smp.producers, smp.subs = len(t.producers), len(t.subs)
		subs := make([]*Subscription, 0, len(t.subs))
		for _, s := range t.subs {
			subs = append(subs, s)
		}
		t.mu.Unlock()
		for _, s := range subs {
			if pa := s.txn; txnUsed && pa != nil {
				if perTopic {
					txn.PerTopicDescs.EmitPendingAck(ch, pa.Sample(), cluster, ns, t.full, s.name)
				} else {
					smp.txnAcks.Add(pa.Sample())
				}
			}
			s.mu.Lock()
			smp.consumers += len(s.consumers)
			unacked := s.unacked
			s.mu.Unlock()
			if !perTopic {
				continue
			}
			slv := []string{cluster, ns, t.full, s.name}
			if s.cursor != nil {
				ch <- prometheus.MustNewConstMetric(descSubBacklog, prometheus.GaugeValue, float64(s.cursor.backlog()), slv...)
			}
			ch <- prometheus.MustNewConstMetric(descSubUnacked, prometheus.GaugeValue, float64(unacked), slv...)
			ch <- prometheus.MustNewConstMetric(descSubRateOut, prometheus.GaugeValue, subscriptionRateOut(s, now), slv...)
		}
		if perTopic {
			emitTopicSample(ch, topicDescs, &smp, cluster, ns, t.full)
			if txnUsed {
				txn.PerTopicDescs.EmitBuffer(ch, smp.txn, cluster, ns, t.full)
			}
			continue
		}
		sum := perNamespace[ns]
		if sum == nil {
			sum = &topicSample{}
			perNamespace[ns] = sum
		}
		sum.add(&smp)
		sum.txnUsed = sum.txnUsed || txnUsed
	}
	for ns, sum := range perNamespace {
		emitTopicSample(ch, namespaceDescs, sum, cluster, ns)
		if sum.txnUsed {
			txn.PerNamespaceDescs.EmitBuffer(ch, sum.txn, cluster, ns)
			txn.PerNamespaceDescs.EmitPendingAck(ch, sum.txnAcks, cluster, ns)
		}
	}
}

// sampleDescs are the descriptors of the topic series, with or without the topic label.
type sampleDescs struct {
	inMsgs, inBytes, outMsgs, outBytes, storage, offloaded, producers, subs, consumers *prometheus.Desc
	latency                                                                            [len(latencyBoundsMs) + 1]*prometheus.Desc
	latencySum, latencyCount                                                           *prometheus.Desc
	rates                                                                              rateDescs
}

func newSampleDescs(labels []string) *sampleDescs {
	d := func(name, help string) *prometheus.Desc { return prometheus.NewDesc(name, help, labels, nil) }
	sd := &sampleDescs{
		inMsgs:       d("pulsar_in_messages_total", "Messages published to the topic."),
		inBytes:      d("pulsar_in_bytes_total", "Bytes published to the topic."),
		outMsgs:      d("pulsar_out_messages_total", "Messages dispatched from the topic."),
		outBytes:     d("pulsar_out_bytes_total", "Bytes dispatched from the topic."),
		storage:      d("pulsar_storage_size", "Bytes stored for the topic."),
		offloaded:    d("pulsar_storage_offloaded_size", "Bytes of the topic in tiered storage."),
		producers:    d("pulsar_producers_count", "Producers connected to the topic."),
		subs:         d("pulsar_subscriptions_count", "Subscriptions of the topic."),
		consumers:    d("pulsar_consumers_count", "Consumers connected to the topic."),
		latencySum:   d("pulsar_storage_write_latency_sum", "Sum of the entries' storage write latencies, in ms."),
		latencyCount: d("pulsar_storage_write_latency_count", "Entries written to storage."),
		rates:        newRateDescs(labels),
	}
	for i, name := range latencyBucketNames {
		sd.latency[i] = d("pulsar_storage_write_latency_"+name, "Entries whose storage write took this long (ms range ending at the name's bound; not cumulative).")
	}
	return sd
}

var (
	topicDescs     = newSampleDescs([]string{"cluster", "namespace", "topic"})
	namespaceDescs = newSampleDescs([]string{"cluster", "namespace"})
	subLabels      = []string{"cluster", "namespace", "topic", "subscription"}
	descSubBacklog = prometheus.NewDesc("pulsar_subscription_back_log", "Unacknowledged entries of the subscription.", subLabels, nil)
	descSubUnacked = prometheus.NewDesc("pulsar_subscription_unacked_messages", "Messages dispatched and not acknowledged.", subLabels, nil)
)

func emitTopicSample(ch chan<- prometheus.Metric, d *sampleDescs, smp *topicSample, lv ...string) {
	counter := func(desc *prometheus.Desc, v int64) {
		ch <- prometheus.MustNewConstMetric(desc, prometheus.CounterValue, float64(v), lv...)
	}
	gauge := func(desc *prometheus.Desc, v float64) {
		ch <- prometheus.MustNewConstMetric(desc, prometheus.GaugeValue, v, lv...)
	}
	counter(d.inMsgs, smp.msgsIn)
	counter(d.inBytes, smp.bytesIn)
	counter(d.outMsgs, smp.msgsOut)
	counter(d.outBytes, smp.bytesOut)
	gauge(d.storage, float64(smp.storage))
	gauge(d.offloaded, float64(smp.offloaded))
	gauge(d.producers, float64(smp.producers))
	gauge(d.subs, float64(smp.subs))
	gauge(d.consumers, float64(smp.consumers))
	// Gauges, as Pulsar types them (dashboards apply rate() to them all the same).
	for i, n := range smp.latency.counts {
		gauge(d.latency[i], float64(n))
	}
	gauge(d.latencySum, float64(smp.latency.sumMicros)/1000)
	gauge(d.latencyCount, float64(smp.latency.count()))
	emitRates(ch, d.rates, smp.rates, lv...)
}
