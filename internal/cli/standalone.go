package cli

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/magnetar-io/magnetar/internal/config"
	"github.com/magnetar-io/magnetar/internal/standalone"
)

func (a *app) standaloneCmd() *cobra.Command {
	cfg := config.DefaultStandaloneConfig()
	cmd := &cobra.Command{
		Use:   "standalone",
		Short: "Run metadata store, bookie and broker in one process (development and small deployments)",
		Args:  cobra.NoArgs,
	}
	b := bindFlags(cmd.Flags(), &cfg)
	testClockFlag(cmd, &cfg.Broker)
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		logger, err := a.load(b, cfg.Validate)
		if err != nil {
			return err
		}
		applyMemoryLimit(cmd.Context(), cfg.MemoryLimitBytes(), a.env.Environ, logger)
		applyGCPercent(cfg.GCPercent, a.env.Environ, logger)
		s, err := standalone.Start(cmd.Context(), cfg, logger)
		if errors.Is(err, standalone.ErrMetadataStoreMismatch) {
			return usageError(err)
		}
		if err != nil {
			return fmt.Errorf("standalone: %w", err)
		}
		var served error
		select {
		case <-cmd.Context().Done():
			logger.Info("shutting down (signal received)")
		case served = <-s.Failed():
			logger.Error("a server stopped on its own; shutting down", "err", served)
		}
		if err := stopWithin(logger, "brokerShutdownTimeoutMs", cfg.Broker.ShutdownTimeoutMs, s.Close); err != nil {
			return fmt.Errorf("standalone: shutdown: %w", err)
		}
		return served
	}
	return cmd
}
