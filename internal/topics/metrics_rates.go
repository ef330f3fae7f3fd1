package topics

import (
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// rateMinInterval is the shortest span a rate is measured over: scrapes closer together
// than this repeat the previous rates, so several scrapers (or a scraper and an operator
// with curl) cannot turn the gauges into noise.
const rateMinInterval = time.Second

// rateMeter turns monotonic counters into the per-second gauges Pulsar exports
// (pulsar_rate_in/out, pulsar_throughput_in/out, pulsar_subscription_msg_rate_out). Pulsar
// computes them over its stats interval; we compute them over the time between scrapes,
// which a dashboard polling /metrics sees the same way. The first scrape reports zero.
type rateMeter struct {
	mu    sync.Mutex
	at    time.Time
	last  [4]int64
	rates [4]float64
}

// observe records the counters' values at now and returns their rates per second since the
// previous observation.
func (m *rateMeter) observe(now time.Time, cur [4]int64) [4]float64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.at.IsZero() {
		m.at, m.last = now, cur
		return m.rates
	}
	dt := now.Sub(m.at).Seconds()
	if dt < rateMinInterval.Seconds() {
		return m.rates
	}
	for i := range cur {
		if cur[i] < m.last[i] { // counters restarted (topic reloaded)
			m.rates[i] = 0
		} else {
			m.rates[i] = float64(cur[i]-m.last[i]) / dt
		}
	}
	m.at, m.last = now, cur
	return m.rates
}

// rateSample is a topic's rates at scrape time: messages and bytes per second, in and out.
type rateSample struct{ msgIn, msgOut, bytesIn, bytesOut float64 }

func (r *rateSample) add(o rateSample) {
	r.msgIn += o.msgIn
	r.msgOut += o.msgOut
	r.bytesIn += o.bytesIn
	r.bytesOut += o.bytesOut
}

// topicRates observes t's counters.
func topicRates(t *Topic, now time.Time) rateSample {
	r := t.rates.observe(now, [4]int64{t.counters.msgsIn.Load(), t.counters.msgsOut.Load(),
		t.counters.bytesIn.Load(), t.counters.bytesOut.Load()})
	return rateSample{msgIn: r[0], msgOut: r[1], bytesIn: r[2], bytesOut: r[3]}
}

// subscriptionRateOut observes s's dispatched-message counter.
func subscriptionRateOut(s *Subscription, now time.Time) float64 {
	return s.rates.observe(now, [4]int64{s.msgsOut.Load()})[0]
}

var descSubRateOut = prometheus.NewDesc("pulsar_subscription_msg_rate_out",
	"Messages per second dispatched to the subscription's consumers, over the time since the previous scrape.", subLabels, nil)

// rateDescs are the rate gauges, with or without the topic label.
type rateDescs struct{ rateIn, rateOut, thrIn, thrOut *prometheus.Desc }

func newRateDescs(labels []string) rateDescs {
	d := func(name, help string) *prometheus.Desc { return prometheus.NewDesc(name, help, labels, nil) }
	return rateDescs{
		rateIn:  d("pulsar_rate_in", "Messages per second published, over the time since the previous scrape."),
		rateOut: d("pulsar_rate_out", "Messages per second dispatched, over the time since the previous scrape."),
		thrIn:   d("pulsar_throughput_in", "Bytes per second published, over the time since the previous scrape."),
		thrOut:  d("pulsar_throughput_out", "Bytes per second dispatched, over the time since the previous scrape."),
	}
}

func emitRates(ch chan<- prometheus.Metric, d rateDescs, r rateSample, lv ...string) {
	ch <- prometheus.MustNewConstMetric(d.rateIn, prometheus.GaugeValue, r.msgIn, lv...)
	ch <- prometheus.MustNewConstMetric(d.rateOut, prometheus.GaugeValue, r.msgOut, lv...)
	ch <- prometheus.MustNewConstMetric(d.thrIn, prometheus.GaugeValue, r.bytesIn, lv...)
	ch <- prometheus.MustNewConstMetric(d.thrOut, prometheus.GaugeValue, r.bytesOut, lv...)
}
