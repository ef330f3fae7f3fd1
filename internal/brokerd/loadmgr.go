package brokerd

import (
	"github.com/magnetar-io/magnetar/internal/config"
	"github.com/magnetar-io/magnetar/internal/ownership"
)

// loadManagerSplit adds the rate limits of automatic splits (off with the splits).
func loadManagerSplit(c config.ClusterConfig, lim ownership.SplitLimits) ownership.SplitLimits {
	if c.AutoBundleSplitEnabled {
		lim.MaxMsgRate = float64(c.LoadManager.BundleMaxMsgRate)
		lim.MaxBandwidthMB = float64(c.LoadManager.BundleMaxBandwidthMbyte)
	}
	return lim
}

func loadManagerScore(c config.LoadManagerConfig) ownership.ScoreConfig {
	return ownership.ScoreConfig{MemoryMB: float64(c.MemoryCapacityMB), BandwidthMBps: float64(c.BandwidthCapacityMbyte),
		MsgRate: float64(c.MsgRateCapacity), Band: float64(c.ScoreBandPercent)}
}

func loadManagerShed(c config.LoadManagerConfig) ownership.ShedConfig {
	return ownership.ShedConfig{ThresholdPercent: float64(c.ThresholdPercent), Grace: c.GracePeriod()}
}
