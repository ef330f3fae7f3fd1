package functions

import (
	"context"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/magnetar-io/magnetar/pkg/pf/pfpb"
)

// metricsCollector exports this worker's instances under the names Pulsar's function,
// source and sink stats use, so dashboards built for Pulsar read them unchanged:
//
//	pulsar_function_received_total, _processed_successfully_total, _user_exceptions_total,
//	  _system_exceptions_total, _last_invocation (and _1min counters of the first four)
//	pulsar_source_received_total, _written_total, _source_exceptions_total,
//	  _system_exceptions_total, _last_invocation (and _1min)
//	pulsar_sink_received_total, _written_total, _sink_exceptions_total,
//	  _system_exceptions_total, _last_invocation (and _1min)
//
// with the labels tenant, namespace, name, instance_id, cluster and fqfn. It is an
// unchecked collector: the set of instances changes between scrapes.
type metricsCollector struct{ w *Worker }

var metricLabels = []string{"tenant", "namespace", "name", "instance_id", "cluster", "fqfn"}

func (metricsCollector) Describe(chan<- *prometheus.Desc) {}

type metricField struct {
	suffix string
	value  func(*pfpb.MetricsData) float64
	gauge  bool
}

// fieldsOf are the metrics of a component type: Pulsar names the success and exception
// counters after what the component does.
func fieldsOf(c ComponentType) (prefix string, fields []metricField) {
	written, userExc := "processed_successfully_total", "user_exceptions_total"
	switch c {
	case ComponentSource:
		prefix, written, userExc = "pulsar_source_", "written_total", "source_exceptions_total"
	case ComponentSink:
		prefix, written, userExc = "pulsar_sink_", "written_total", "sink_exceptions_total"
	default:
		prefix = "pulsar_function_"
	}
	fields = []metricField{
		{"received_total", func(m *pfpb.MetricsData) float64 { return float64(m.ReceivedTotal) }, false},
		{written, func(m *pfpb.MetricsData) float64 { return float64(m.ProcessedSuccessfullyTotal) }, false},
		{userExc, func(m *pfpb.MetricsData) float64 { return float64(m.UserExceptionsTotal) }, false},
		{"system_exceptions_total", func(m *pfpb.MetricsData) float64 { return float64(m.SystemExceptionsTotal) }, false},
		{"received_total_1min", func(m *pfpb.MetricsData) float64 { return float64(m.ReceivedTotal_1Min) }, false},
		{written + "_1min", func(m *pfpb.MetricsData) float64 { return float64(m.ProcessedSuccessfullyTotal_1Min) }, false},
		{userExc + "_1min", func(m *pfpb.MetricsData) float64 { return float64(m.UserExceptionsTotal_1Min) }, false},
		{"system_exceptions_total_1min", func(m *pfpb.MetricsData) float64 { return float64(m.SystemExceptionsTotal_1Min) }, false},
		{"last_invocation", func(m *pfpb.MetricsData) float64 { return float64(m.LastInvocation) }, true},
	}
	return prefix, fields
}

func (c metricsCollector) Collect(ch chan<- prometheus.Metric) {
	c.w.mu.Lock()
	sups := make([]*supervisor, 0, len(c.w.instances))
	for _, s := range c.w.instances {
		sups = append(sups, s)
	}
	c.w.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for _, s := range sups {
		m := s.metrics(ctx, false)
		parts := strings.SplitN(s.fqfn, "/", 3)
		if len(parts) != 3 {
			continue
		}
		labels := []string{parts[0], parts[1], parts[2], strconv.Itoa(s.id), c.w.opts.ClusterName, s.fqfn}
		prefix, fields := fieldsOf(s.component)
		for _, f := range fields {
			t := prometheus.CounterValue
			if f.gauge {
				t = prometheus.GaugeValue
			}
			desc := prometheus.NewDesc(prefix+f.suffix, "", metricLabels, nil)
			ch <- prometheus.MustNewConstMetric(desc, t, f.value(m), labels...)
		}
	}
}
