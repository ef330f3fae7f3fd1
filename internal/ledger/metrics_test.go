package ledger

import (
	"context"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

// metricValue sums the samples of one metric family in reg (counters and histogram counts).
func metricValue(t *testing.T, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	sum := 0.0
	for _, f := range fams {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			sum += m.GetCounter().GetValue() + float64(m.GetHistogram().GetSampleCount())
		}
	}
	return sum
}

func TestClientMetricsSharedRegistry(t *testing.T) {
	fc := newFakeCluster(t)
	fc.addBookies(4)
	reg := prometheus.NewRegistry()
	var clients []*client
	for range 2 {
		c, err := newClient(context.Background(), ClientOptions{Config: testConfig(), Store: fc.store, Bookies: fc.client(), Registerer: reg})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		clients = append(clients, c)
	}
	ctx := testCtx(t)
	w, err := clients[0].Create(ctx, CreateOptions{EnsembleSize: 3, WriteQuorum: 3, AckQuorum: 2, Password: testPassword})
	if err != nil {
		t.Fatal(err)
	}
	for i := range int64(10) {
		if _, err := w.Append(ctx, entryData(i)); err != nil {
			t.Fatal(err)
		}
	}
	fc.kill(mustMeta(t, fc.store, w.ID()).Fragments[0].Ensemble[0])
	for i := int64(10); i < 20; i++ {
		if _, err := w.Append(ctx, entryData(i)); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, func() bool { return metricValue(t, reg, "bookkeeper_client_ensemble_changes_total") >= 1 })
	if _, err := clients[1].Open(ctx, w.ID(), OpenOptions{Recovery: true, Password: testPassword}); err != nil {
		t.Fatal(err)
	}
	if got := metricValue(t, reg, "bookkeeper_client_ledger_recoveries_total"); got != 1 {
		t.Fatalf("recoveries %v", got)
	}
	if got := metricValue(t, reg, "bookkeeper_client_add_entry_latency_seconds"); got != 20 {
		t.Fatalf("add latency samples %v, want 20", got)
	}
}
