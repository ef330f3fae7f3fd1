package ledger

import (
	"errors"
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
)

// clientMetrics are the ledger client's Prometheus metrics. They exist (unregistered)
// even without a Registerer, so the code paths never check for nil.
type clientMetrics struct {
	addLatency      prometheus.Histogram
	ensembleChanges prometheus.Counter
	specReads       prometheus.Counter
	recoveries      *prometheus.CounterVec
}

func newClientMetrics(reg prometheus.Registerer) (*clientMetrics, error) {
	m := &clientMetrics{
		addLatency: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "bookkeeper_client_add_entry_latency_seconds",
			Help:    "Time from AppendAsync to the acknowledgement of the entry (Qa bookies and every earlier entry).",
			Buckets: prometheus.ExponentialBuckets(0.0005, 2, 14), // 0.5 ms .. ~4 s
		}),
		ensembleChanges: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "bookkeeper_client_ensemble_changes_total",
			Help: "Ensemble changes stored in ledger metadata (bookies replaced after a failed add).",
		}),
		specReads: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "bookkeeper_client_speculative_reads_total",
			Help: "Reads sent to a further replica because the previous one was slow (speculativeReadTimeout).",
		}),
		recoveries: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "bookkeeper_client_ledger_recoveries_total",
			Help: "Ledger recoveries (open with recovery of a ledger that was not closed), by result: ok or error.",
		}, []string{"result"}),
	}
	if reg == nil {
		return m, nil
	}
	for _, c := range []prometheus.Collector{m.addLatency, m.ensembleChanges, m.specReads, m.recoveries} {
		if err := reg.Register(c); err != nil {
			var are prometheus.AlreadyRegisteredError
			if errors.As(err, &are) {
				// Several clients in one process share the collectors already registered.
				switch c {
				case m.addLatency:
					m.addLatency = are.ExistingCollector.(prometheus.Histogram)
				case m.ensembleChanges:
					m.ensembleChanges = are.ExistingCollector.(prometheus.Counter)
				case m.specReads:
					m.specReads = are.ExistingCollector.(prometheus.Counter)
				case m.recoveries:
					m.recoveries = are.ExistingCollector.(*prometheus.CounterVec)
				}
				continue
			}
			return nil, fmt.Errorf("ledger: register metrics: %w", err)
		}
	}
	return m, nil
}
