package cli

import (
	"fmt"
	"runtime"

	"github.com/spf13/cobra"

	"github.com/magnetar-io/magnetar/internal/config"
)

// roles lists every subcommand of the binary (ARCHITECTURE.md §2). A role whose issue has not
// landed yet is registered with notYet so `magnetar --help` already shows the whole tool.
func roles(a *app) []*cobra.Command {
	return []*cobra.Command{
		a.standaloneCmd(),
		notYet("metadata", "Run an etcd metadata-store member (single or part of a static cluster)"),
		a.bookieCmd(),
		notYet("broker", "Run a broker: serves the Pulsar binary protocol and admin REST API"),
		notYet("proxy", "Run a proxy: a stateless gateway that forwards clients to owner brokers"),
		notYet("admin", "Administer clusters, tenants, namespaces, topics (pulsar-admin style)"),
		a.clientCmd(),
		a.perfCmd(),
		versionCmd(),
	}
}

func notYet(name, short string) *cobra.Command {
	return &cobra.Command{
		Use:                name,
		Short:              short,
		DisableFlagParsing: true,
		RunE:               func(*cobra.Command, []string) error { return errNotAvailable(name) },
	}
}

func versionCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version of this build",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			_, err := fmt.Fprintf(cmd.OutOrStdout(), "magnetar %s (%s, %s/%s)\n", Version, runtime.Version(), runtime.GOOS, runtime.GOARCH)
			return err
		},
	}
}

func (a *app) standaloneCmd() *cobra.Command {
	cfg := config.DefaultStandaloneConfig()
	cmd := &cobra.Command{
		Use:   "standalone",
		Short: "Run metadata store, bookie and broker in one process (development and small deployments)",
		Args:  cobra.NoArgs,
	}
	b := bindFlags(cmd.Flags(), &cfg)
	cmd.RunE = func(*cobra.Command, []string) error {
		if _, err := a.load(b, cfg.Validate); err != nil {
			return err
		}
		return errNotAvailable("standalone")
	}
	return cmd
}
