package ownership

import "math"

// Load score: one number per broker, from its load report, that assignment (assign.go) and
// shedding (shed.go) compare. Like Pulsar's ThresholdShedder and LeastLongTermMessageRate it
// is the broker's most used resource, in percent of a capacity: CPU (already a percentage),
// memory, bandwidth (in+out) and message rate (in+out). A broker is as loaded as its
// tightest resource, whichever that is.

// ScoreConfig holds the capacities the score divides by, and the band width within which
// two scores count as equal.
type ScoreConfig struct {
	// MemoryMB is the memory a broker may use (100% memory usage).
	MemoryMB float64
	// BandwidthMBps is the NIC budget, in+out, in MB/s (Pulsar reads it from the NIC; we
	// take it from config).
	BandwidthMBps float64
	// MsgRate is the message rate, in+out, counted as 100%.
	MsgRate float64
	// Band: scores closer than this many percentage points are equal, and the broker with
	// fewer bundles wins. Load reports are noisy (a CPU sample over one report interval);
	// without a band, every new bundle of an idle cluster would go to whichever broker
	// sampled a little lower, instead of spreading by bundle count.
	Band float64
}

// DefaultScoreConfig: 4 GiB of memory, 1 Gbit/s of bandwidth, 200k msg/s, 10-point band
// (Pulsar's loadBalancerBrokerThresholdShedderPercentage default is also 10).
func DefaultScoreConfig() ScoreConfig {
	return ScoreConfig{MemoryMB: 4096, BandwidthMBps: 125, MsgRate: 200_000, Band: 10}
}

func (c ScoreConfig) withDefaults() ScoreConfig {
	d := DefaultScoreConfig()
	if c.MemoryMB <= 0 {
		c.MemoryMB = d.MemoryMB
	}
	if c.BandwidthMBps <= 0 {
		c.BandwidthMBps = d.BandwidthMBps
	}
	if c.MsgRate <= 0 {
		c.MsgRate = d.MsgRate
	}
	if c.Band <= 0 {
		c.Band = d.Band
	}
	return c
}

// Score is a report's load in percent of its tightest resource (0 for no report: a broker
// that has not reported yet is assumed idle).
func (c ScoreConfig) Score(r *LoadReport) float64 {
	if r == nil {
		return 0
	}
	s := max(r.CPUPercent,
		100*r.MemoryMB/c.MemoryMB,
		100*(r.BytesIn+r.BytesOut)/(c.BandwidthMBps*(1<<20)),
		100*(r.MsgRateIn+r.MsgRateOut)/c.MsgRate)
	if math.IsNaN(s) || s < 0 {
		return 0
	}
	return s
}

// band is the score's band number: brokers in the same band tie on load.
func (c ScoreConfig) band(score float64) int { return int(score / c.Band) }

// candidate is a broker considered for a free bundle.
type candidate struct {
	bi      BrokerInfo
	score   float64
	bundles int    // owned plus recently assigned
	tie     uint32 // hash of bundle and broker, so exact ties spread
}

// less orders candidates, least loaded first: lower score band, then fewer bundles, then
// lower exact score, then the hash.
func (c ScoreConfig) less(a, b candidate) bool {
	if ba, bb := c.band(a.score), c.band(b.score); ba != bb {
		return ba < bb
	}
	if a.bundles != b.bundles {
		return a.bundles < b.bundles
	}
	if a.score != b.score {
		return a.score < b.score
	}
	return a.tie < b.tie
}
