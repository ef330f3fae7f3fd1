package managedledger

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

func TestFactoryMetrics(t *testing.T) {
	e := newEnv(t)
	reg := prometheus.NewRegistry()
	f, err := NewFactory(FactoryOptions{Ledger: e.lc, Store: e.store, Config: e.cfg, Now: e.clock.Now, DisableBackground: true, Registerer: reg})
	must(t, err)
	defer f.Close(ctxT(t))
	ml := open(t, f, "t/metrics", nil)
	c, err := ml.OpenCursor(ctxT(t), "s", InitialPositionEarliest)
	must(t, err)
	c.SetActive() // a consumer is connected: adds are cached
	addN(t, ml, 5, "x")
	readAll(t, c)
	mfs, err := reg.Gather()
	must(t, err)
	got := map[string]float64{}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			if m.GetGauge() != nil {
				got[mf.GetName()] = m.GetGauge().GetValue()
			} else {
				got[mf.GetName()] = m.GetCounter().GetValue()
			}
		}
	}
	if got["pulsar_ml_count"] != 1 || got["pulsar_ml_cache_hits_total"] != 5 || got["pulsar_ml_StoredMessagesSize"] != float64(ml.TotalSize()) {
		t.Fatalf("metrics %v", got)
	}
}
