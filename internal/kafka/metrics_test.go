package kafka

import (
	"net"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	promtestutil "github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/magnetar-io/magnetar/internal/config"
)

// TestMetrics: requests are counted per API and a group's lag per partition is the high
// watermark minus its committed offset.
func TestMetrics(t *testing.T) {
	be := newMemBackend()
	reg := prometheus.NewRegistry()
	cfg := config.DefaultKafkaConfig()
	cfg.Listeners = "PLAINTEXT://127.0.0.1:0"
	s, err := New(Options{Config: cfg, Backend: be, Registerer: reg})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Listen(); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ta := s.Addrs()[0].(*net.TCPAddr)
	be.host, be.port = "127.0.0.1", int32(ta.Port)
	ctx := testCtx(t)
	cl := newClient(t, ta.String(), kgo.AllowAutoTopicCreation())
	for i := 0; i < 3; i++ {
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "m", Value: []byte("x")}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	adm := kadm.NewClient(cl)
	offs := kadm.Offsets{}
	offs.Add(kadm.Offset{Topic: "m", Partition: 0, At: 1})
	if _, err := adm.CommitOffsets(ctx, "mg", offs); err != nil {
		t.Fatal(err)
	}
	if n := promtestutil.ToFloat64(s.metrics.requests.WithLabelValues("Produce")); n < 3 {
		t.Fatalf("%v Produce requests counted, want >= 3", n)
	}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	lag := -1.0
	for _, mf := range mfs {
		if mf.GetName() == "pulsar_kafka_group_lag" {
			for _, m := range mf.Metric {
				lag = m.GetGauge().GetValue()
			}
		}
	}
	if lag != 2 {
		t.Fatalf("group lag %v, want 3 produced - 1 committed = 2", lag)
	}
}
