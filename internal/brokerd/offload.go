package brokerd

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/magnetar-io/magnetar/internal/config"
	"github.com/magnetar-io/magnetar/internal/offload"
)

// offloadOptions are what every offloader of a process shares: the metrics (registered
// here) and the chunk cache of managedLedgerOffloadReadCacheSizeInBytes.
func offloadOptions(c config.OffloadConfig, log *slog.Logger, reg prometheus.Registerer) (offload.Options, error) {
	var m *offload.Metrics
	if reg != nil {
		m = offload.NewMetrics()
		if err := reg.Register(m); err != nil {
			return offload.Options{}, fmt.Errorf("offload metrics: %w", err)
		}
	}
	if log == nil {
		log = slog.Default()
	}
	size := c.ReadCacheSize
	if size == 0 {
		size = offload.DefaultReadCacheSize
	}
	return offload.Options{Logger: log, Metrics: m, Cache: offload.NewChunkCache(size)}, nil
}

// startChecked builds the offloader of managedLedgerOffloadDriver and proves it works: a
// probe object is written, read back and deleted, so wrong credentials or a missing bucket
// stop the broker at start instead of failing the first offload hours later.
func startChecked(ctx context.Context, c config.OffloadConfig, opts offload.Options) (offload.Offloader, error) {
	oc := offload.PoliciesFromConfig(c).Config()
	o, err := offload.New(ctx, oc, opts)
	if err != nil {
		return nil, fmt.Errorf("tiered storage (managedLedgerOffloadDriver=%s): %w", c.Driver, err)
	}
	cctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if err := o.Check(cctx); err != nil {
		o.Close()
		return nil, fmt.Errorf("tiered storage (managedLedgerOffloadDriver=%s): %w", c.Driver, err)
	}
	opts.Logger.Info("tiered storage ready", "driver", oc.Driver, "location", oc.DriverMetadata())
	return o, nil
}

// StartOffloadPool is the broker's tiered storage: a pool of offloaders, one per distinct
// driver configuration that topics' effective offload policies name (Pulsar builds one
// LedgerOffloader per distinct OffloadPolicies), bounded by
// managedLedgerOffloadMaxOffloaders. The broker's own driver (nil without
// managedLedgerOffloadDriver) is built and checked at start (startChecked) and pinned in
// the pool; the caller closes it after the pool. A namespace may name a driver
// although the broker has none.
func StartOffloadPool(ctx context.Context, c config.OffloadConfig, log *slog.Logger, reg prometheus.Registerer) (*offload.Pool, offload.Offloader, error) {
	opts, err := offloadOptions(c, log, reg)
	if err != nil {
		return nil, nil, err
	}
	pool := offload.NewPool(opts, c.MaxOffloaders)
	if c.Driver == "" {
		return pool, nil, nil
	}
	o, err := startChecked(ctx, c, opts)
	if err != nil {
		return nil, nil, err
	}
	pool.Pin(offload.PoliciesFromConfig(c).Config(), o)
	return pool, o, nil
}
