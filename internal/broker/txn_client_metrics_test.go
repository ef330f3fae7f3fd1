package broker

import (
	"errors"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/magnetar-io/magnetar/internal/txn"
)

// A failed call counts as failed, not in the latency summary; a name that does not parse is
// labelled namespace "unknown", as Pulsar labels it; nothing is left pending.
func TestTBClientStatsCountsFailures(t *testing.T) {
	perTopic := true
	st := newTBClientStats("c", func() bool { return perTopic })
	boom := errors.New("owner unreachable")
	topic := "persistent://t/ns/x"
	_ = st.observe(topic, txn.Commit, func() error { return boom })
	_ = st.observe(topic, txn.Commit, func() error { return boom })
	_ = st.observe(topic, txn.Abort, func() error { return nil })
	if err := st.observe("not a topic name//", txn.Abort, func() error { return boom }); !errors.Is(err, boom) {
		t.Fatalf("observe returned %v, want the call's error", err)
	}
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(st)
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			key := mf.GetName()
			for _, l := range m.GetLabel() {
				if l.GetName() != "cluster" {
					key += "," + l.GetName() + "=" + l.GetValue()
				}
			}
			switch {
			case m.GetCounter() != nil:
				got[key] = m.GetCounter().GetValue()
			case m.GetGauge() != nil:
				got[key] = m.GetGauge().GetValue()
			case m.GetSummary() != nil:
				got[key+",count"] = float64(m.GetSummary().GetSampleCount())
			}
		}
	}
	for k, want := range map[string]float64{
		"pulsar_txn_tb_client_commit_failed_total,namespace=t/ns,topic=" + topic:             2,
		"pulsar_txn_tb_client_commit_latency,namespace=t/ns,topic=" + topic + ",count":       0,
		"pulsar_txn_tb_client_abort_latency,namespace=t/ns,topic=" + topic + ",count":        1,
		"pulsar_txn_tb_client_abort_failed_total,namespace=unknown,topic=not a topic name//": 1,
		"pulsar_txn_tb_client_pending_requests":                                              0,
	} {
		if v, ok := got[k]; !ok || v != want {
			t.Errorf("%s = %v (present %v), want %v", k, v, ok, want)
		}
	}

	perTopic = false // exposeTopicLevelMetricsInPrometheus switched off at run time
	if n := testutil.CollectAndCount(st, "pulsar_txn_tb_client_commit_failed_total"); n != 2 {
		t.Fatalf("%d per-namespace commit_failed series, want 2 (t/ns and unknown)", n)
	}
}
