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

// StartOffloader builds the tiered storage of managedLedgerOffloadDriver (nil without one)
// and proves it works: a probe object is written, read back and deleted, so wrong
// credentials or a missing bucket stop the broker at start instead of failing the first
// offload hours later.
func StartOffloader(ctx context.Context, c config.OffloadConfig, log *slog.Logger, reg prometheus.Registerer) (offload.Offloader, error) {
	if c.Driver == "" {
		return nil, nil
	}
	var m *offload.Metrics
	if reg != nil {
		m = offload.NewMetrics()
		if err := reg.Register(m); err != nil {
			return nil, fmt.Errorf("offload metrics: %w", err)
		}
	}
	oc := offload.PoliciesFromConfig(c).Config()
	o, err := offload.New(ctx, oc, offload.Options{Logger: log, Metrics: m})
	if err != nil {
		return nil, fmt.Errorf("tiered storage (managedLedgerOffloadDriver=%s): %w", c.Driver, err)
	}
	cctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if err := o.Check(cctx); err != nil {
		o.Close()
		return nil, fmt.Errorf("tiered storage (managedLedgerOffloadDriver=%s): %w", c.Driver, err)
	}
	log.Info("tiered storage ready", "driver", oc.Driver, "location", oc.DriverMetadata())
	return o, nil
}
