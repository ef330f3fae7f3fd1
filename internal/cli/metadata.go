package cli

import (
	"context"
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/magnetar-io/magnetar/internal/config"
	"github.com/magnetar-io/magnetar/internal/metadata/etcdstore"
)

// metadataCmd is `magnetar metadata`: one etcd member, alone or in a static cluster, until
// SIGTERM or Ctrl-C. Roles point at the members with --metadata-url etcd://host:port,...
func (a *app) metadataCmd() *cobra.Command {
	cfg := config.DefaultMetadataConfig()
	cmd := &cobra.Command{
		Use:   "metadata",
		Short: "Run an etcd metadata-store member (single or part of a static cluster)",
		Long: `Run an etcd member that stores Magnetar's metadata, so a cluster needs nothing else installed.

A single member:
  magnetar metadata --data-dir /var/lib/magnetar/metadata

A three-member cluster (run on each host with its own --name and URLs):
  magnetar metadata --name m1 --data-dir D \
    --listen-peer http://10.0.0.1:2380 --listen-client http://10.0.0.1:2379 \
    --initial-cluster m1=http://10.0.0.1:2380,m2=http://10.0.0.2:2380,m3=http://10.0.0.3:2380

Other roles then use --metadata-url etcd://10.0.0.1:2379,10.0.0.2:2379,10.0.0.3:2379.`,
		Args: cobra.NoArgs,
	}
	b := bindFlags(cmd.Flags(), &cfg)
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		logger, err := a.load(b, cfg.Validate)
		if err != nil {
			return err
		}
		ctx := cmd.Context()
		m, err := etcdstore.StartEmbedded(ctx, cfg, logger)
		if errors.Is(err, etcdstore.ErrEmbedConfig) {
			return usageError(err)
		}
		if err != nil {
			return err
		}
		var failed error
		select {
		case <-ctx.Done():
			logger.Info("metadata member stopping on signal")
		case err := <-m.Err():
			failed = fmt.Errorf("metadata member failed: %w", err)
		case <-m.Stopped():
			failed = errors.New("metadata member stopped (removed from the cluster, or a fatal error logged above)")
		}
		closeMember := func(context.Context) error { m.Close(); return nil }
		return errors.Join(failed, stopWithin(logger, "metadataShutdownTimeoutMs", cfg.ShutdownTimeoutMs, closeMember))
	}
	return cmd
}
