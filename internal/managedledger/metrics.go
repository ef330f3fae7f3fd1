package managedledger

import (
	"github.com/prometheus/client_golang/prometheus"
)

// factoryCollector exports broker-wide managed-ledger metrics with Pulsar's names where one
// exists. It computes everything at scrape time from the factory, so the hot paths keep
// plain counters. Per-topic series are the broker's business (it has the namespace labels);
// it reads them from ManagedLedger.Stats.
type factoryCollector struct {
	f *Factory

	count, cacheUsed, cacheEntries   *prometheus.Desc
	cacheHits, cacheMisses, cacheEvs *prometheus.Desc
	addErrors, readErrors, stored    *prometheus.Desc
}

func newFactoryCollector(f *Factory) *factoryCollector {
	d := func(name, help string) *prometheus.Desc { return prometheus.NewDesc(name, help, nil, nil) }
	return &factoryCollector{
		f:            f,
		count:        d("pulsar_ml_count", "Managed ledgers open on this broker."),
		cacheUsed:    d("pulsar_ml_cache_used_size", "Bytes held by the entry cache."),
		cacheEntries: d("pulsar_ml_cache_entries", "Entries held by the entry cache."),
		cacheHits:    d("pulsar_ml_cache_hits_total", "Entry reads served by the entry cache."),
		cacheMisses:  d("pulsar_ml_cache_misses_total", "Entry reads the entry cache could not serve."),
		cacheEvs:     d("pulsar_ml_cache_evictions_total", "Entries evicted from the entry cache (size or age)."),
		addErrors:    d("pulsar_ml_AddEntryErrors", "Adds that completed with an error, over the open managed ledgers."),
		readErrors:   d("pulsar_ml_ReadEntriesErrors", "Cursor reads that failed, over the open managed ledgers."),
		stored:       d("pulsar_ml_StoredMessagesSize", "Bytes stored by the open managed ledgers."),
	}
}

func (c *factoryCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.count, c.cacheUsed, c.cacheEntries, c.cacheHits, c.cacheMisses, c.cacheEvs, c.addErrors, c.readErrors, c.stored} {
		ch <- d
	}
}

func (c *factoryCollector) Collect(ch chan<- prometheus.Metric) {
	cs := c.f.cache.stats()
	mls := c.f.openLedgers()
	var addErr, readErr, stored int64
	for _, ml := range mls {
		s := ml.Stats()
		addErr += s.AddErrors
		readErr += s.ReadErrors
		stored += s.TotalSize
	}
	g := func(d *prometheus.Desc, v int64) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, float64(v))
	}
	k := func(d *prometheus.Desc, v int64) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v))
	}
	g(c.count, int64(len(mls)))
	g(c.cacheUsed, cs.SizeBytes)
	g(c.cacheEntries, int64(cs.Entries))
	k(c.cacheHits, cs.Hits)
	k(c.cacheMisses, cs.Misses)
	k(c.cacheEvs, cs.Evictions)
	// Sums over the ledgers open now: they can drop when a ledger closes, so gauges.
	g(c.addErrors, addErr)
	g(c.readErrors, readErr)
	g(c.stored, stored)
}
