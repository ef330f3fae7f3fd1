package cli

import (
	"github.com/spf13/cobra"

	"github.com/magnetar-io/magnetar/internal/config"
)

// testClockFlag adds the hidden --test-clock-offset flag (the chaos harness's clock fault,
// reliability.md R12): the broker reads retention, TTL, transaction timeouts and delayed
// delivery on a clock shifted by it. Test only; no config key, hidden from --help.
func testClockFlag(cmd *cobra.Command, cfg *config.BrokerConfig) {
	cmd.Flags().DurationVar(&cfg.TestClockOffset, "test-clock-offset", 0, "test only: skew the broker's clock by this much (e.g. 5m, -5m)")
	_ = cmd.Flags().MarkHidden("test-clock-offset")
}
