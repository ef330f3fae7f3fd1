package cli

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/magnetar-io/magnetar/internal/brokerd"
	"github.com/magnetar-io/magnetar/internal/config"
)

// brokerFlagAliases: --metadata-store-url (the key's own flag form) means --metadata-url.
var brokerFlagAliases = map[string]string{"metadata-store-url": "metadata-url"}

// brokerCmd is `magnetar broker`: one broker of a cluster (binary protocol + admin HTTP)
// over an external etcd and its bookies, until SIGINT/SIGTERM; then it releases its bundles
// so clients move to the other brokers, and stops.
func (a *app) brokerCmd() *cobra.Command {
	cfg := config.DefaultBrokerRoleConfig()
	cmd := &cobra.Command{
		Use:   "broker",
		Short: "Run a broker: serves the Pulsar binary protocol and admin REST API",
		Args:  cobra.NoArgs,
	}
	b := bindFlags(cmd.Flags(), &cfg)
	testClockFlag(cmd, &cfg.Broker)
	aliasFlags(cmd, brokerFlagAliases)
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		logger, err := a.load(b, cfg.Validate)
		if err != nil {
			return err
		}
		br, err := brokerd.Start(cmd.Context(), cfg, logger)
		if err != nil {
			return fmt.Errorf("broker: %w", err)
		}
		var served error
		select {
		case <-cmd.Context().Done():
			logger.Info("shutting down (signal received)")
		case served = <-br.Failed():
			logger.Error("a server stopped on its own; shutting down", "err", served)
		}
		if err := stopWithin(logger, "brokerShutdownTimeoutMs", cfg.Broker.ShutdownTimeoutMs, br.Close); err != nil {
			return fmt.Errorf("broker: shutdown: %w", err)
		}
		return served
	}
	return cmd
}
