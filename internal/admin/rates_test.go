package admin

import (
	"testing"
	"time"

	"github.com/magnetar-io/magnetar/internal/topics"
)

func TestRateTracker(t *testing.T) {
	var rt rateTracker
	t0 := time.Unix(1000, 0)
	st := topics.TopicStats{MsgInCounter: 100, BytesInCounter: 1000}
	rt.apply("a", &st, t0)
	if st.MsgRateIn != 0 {
		t.Fatalf("first sample rate %v", st.MsgRateIn)
	}
	st = topics.TopicStats{MsgInCounter: 300, BytesInCounter: 5000, MsgOutCounter: 50}
	rt.apply("a", &st, t0.Add(2*time.Second))
	if st.MsgRateIn != 100 || st.MsgThroughputIn != 2000 || st.MsgRateOut != 25 {
		t.Fatalf("rates %+v", st)
	}
	st = topics.TopicStats{MsgInCounter: 310}
	rt.apply("a", &st, t0.Add(2500*time.Millisecond))
	if st.MsgRateIn != 100 {
		t.Fatalf("close sample should repeat the last rate: %v", st.MsgRateIn)
	}
	st = topics.TopicStats{MsgInCounter: 5} // reloaded: counters restarted
	rt.apply("a", &st, t0.Add(4*time.Second))
	if st.MsgRateIn != 0 {
		t.Fatalf("rate after counter reset %v", st.MsgRateIn)
	}
	rt.apply("b", &topics.TopicStats{}, t0.Add(10*time.Minute))
	if _, ok := rt.samples["a"]; ok || len(rt.samples) != 1 {
		t.Fatalf("stale sample kept: %v", rt.samples)
	}
}
