package admin

import (
	"sync"
	"time"

	"github.com/magnetar-io/magnetar/internal/topics"
)

// rateTracker turns the broker's monotonic per-topic counters into the msgRate* and
// msgThroughput* fields of topic stats: the rate over the time since the previous stats
// request for the topic (at least rateMinInterval apart; closer requests repeat the last
// rates). Pulsar computes them over its stats interval; a tool that polls stats sees the
// same numbers either way. Samples not refreshed for rateSampleTTL are dropped, so memory
// is bounded by the topics queried in that window.
type rateTracker struct {
	mu        sync.Mutex
	samples   map[string]rateSample
	lastPrune time.Time
}

const (
	rateMinInterval = time.Second
	rateSampleTTL   = 5 * time.Minute
)

type rateSample struct {
	at                   time.Time
	in, out, bIn, bOut   int64
	rIn, rOut, tIn, tOut float64
}

// apply fills st's rates from its counters and remembers them for topic.
func (rt *rateTracker) apply(topic string, st *topics.TopicStats, now time.Time) {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	if rt.samples == nil {
		rt.samples = map[string]rateSample{}
	}
	cur := rateSample{at: now, in: st.MsgInCounter, out: st.MsgOutCounter, bIn: st.BytesInCounter, bOut: st.BytesOutCounter}
	prev, ok := rt.samples[topic]
	switch {
	case ok && now.Sub(prev.at) < rateMinInterval:
		cur = prev // too close to measure: repeat the last rates
	case ok:
		dt := now.Sub(prev.at).Seconds()
		rate := func(now, before int64) float64 {
			if now < before { // the topic was reloaded and its counters restarted
				return 0
			}
			return float64(now-before) / dt
		}
		cur.rIn, cur.rOut, cur.tIn, cur.tOut = rate(cur.in, prev.in), rate(cur.out, prev.out), rate(cur.bIn, prev.bIn), rate(cur.bOut, prev.bOut)
		rt.samples[topic] = cur
	default:
		rt.samples[topic] = cur
	}
	st.MsgRateIn, st.MsgRateOut, st.MsgThroughputIn, st.MsgThroughputOut = cur.rIn, cur.rOut, cur.tIn, cur.tOut
	if now.Sub(rt.lastPrune) > rateSampleTTL {
		rt.lastPrune = now
		for k, s := range rt.samples {
			if now.Sub(s.at) > rateSampleTTL {
				delete(rt.samples, k)
			}
		}
	}
}
