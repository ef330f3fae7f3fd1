package config

import (
	"errors"
	"time"
)

// LoadManagerConfig tunes the leader's assignment, shedding and the automatic splits on
// rates (internal/ownership: loadscore.go, shed.go, split.go). Pulsar's keys where it has
// them; durations in milliseconds (Pulsar's are in minutes) so tests can shorten them.
type LoadManagerConfig struct {
	// Capacities a broker's load score is a percentage of (its tightest resource wins).
	MemoryCapacityMB       int `key:"loadBalancerMemoryCapacityMB" help:"broker memory counted as 100% in the load score"`
	BandwidthCapacityMbyte int `key:"loadBalancerBandwidthCapacityMbytes" help:"broker bandwidth in+out (MB/s) counted as 100% in the load score"`
	MsgRateCapacity        int `key:"loadBalancerMsgRateCapacity" help:"broker message rate in+out (msg/s) counted as 100% in the load score"`
	// ScoreBandPercent: brokers whose scores differ by less than this count as equally loaded
	// and are ordered by bundle count.
	ScoreBandPercent int `key:"loadBalancerScoreBandPercentage" help:"load score points within which brokers tie and bundle count decides"`
	// ThresholdPercent: the leader sheds from a broker whose score exceeds the average by
	// more than this (Pulsar's ThresholdShedder).
	ThresholdPercent int `key:"loadBalancerBrokerThresholdShedderPercentage" help:"load score points above the average before the leader sheds bundles"`
	// GracePeriodMillis: a bundle shed is not shed again for this long.
	GracePeriodMillis int64 `key:"loadBalancerSheddingGracePeriodMillis" help:"milliseconds before a shed bundle may be shed again"`
	// Automatic split on rates of one bundle (in+out), 0 for off.
	BundleMaxMsgRate        int `key:"loadBalancerNamespaceBundleMaxMsgRate" help:"messages/s in+out of one bundle before it is split"`
	BundleMaxBandwidthMbyte int `key:"loadBalancerNamespaceBundleMaxBandwidthMbytes" help:"MB/s in+out of one bundle before it is split"`
}

// DefaultLoadManagerConfig: Pulsar's threshold (10) and split rates (30000 msg/s, 100 MB/s);
// a 30-minute grace as Pulsar's; capacities of a modest machine.
func DefaultLoadManagerConfig() LoadManagerConfig {
	return LoadManagerConfig{MemoryCapacityMB: 4096, BandwidthCapacityMbyte: 125, MsgRateCapacity: 200_000,
		ScoreBandPercent: 10, ThresholdPercent: 10, GracePeriodMillis: 30 * 60_000,
		BundleMaxMsgRate: 30_000, BundleMaxBandwidthMbyte: 100}
}

// GracePeriod is GracePeriodMillis as a duration.
func (c *LoadManagerConfig) GracePeriod() time.Duration {
	return time.Duration(c.GracePeriodMillis) * time.Millisecond
}

// Validate checks the load manager settings.
func (c *LoadManagerConfig) Validate() error {
	return errors.Join(
		Between("loadBalancerMemoryCapacityMB", c.MemoryCapacityMB, 1, 1<<24),
		Between("loadBalancerBandwidthCapacityMbytes", c.BandwidthCapacityMbyte, 1, 1<<20),
		Between("loadBalancerMsgRateCapacity", c.MsgRateCapacity, 1, 1<<30),
		Between("loadBalancerScoreBandPercentage", c.ScoreBandPercent, 1, 100),
		Between("loadBalancerBrokerThresholdShedderPercentage", c.ThresholdPercent, 1, 100),
		Between("loadBalancerSheddingGracePeriodMillis", c.GracePeriodMillis, 0, 24*3_600_000),
		Between("loadBalancerNamespaceBundleMaxMsgRate", c.BundleMaxMsgRate, 0, 1<<30),
		Between("loadBalancerNamespaceBundleMaxBandwidthMbytes", c.BundleMaxBandwidthMbyte, 0, 1<<20),
	)
}
