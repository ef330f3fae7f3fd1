package cli

import (
	"fmt"
	"runtime"

	"github.com/spf13/cobra"
)

// roles lists every subcommand of the binary (docs/ARCHITECTURE.md §2). A role whose issue has not
// landed yet is registered with notYet so `magnetar --help` already shows the whole tool.
func roles(a *app) []*cobra.Command {
	return []*cobra.Command{
		a.standaloneCmd(),
		a.metadataCmd(),
		a.bookieCmd(),
		a.devClusterCmd(),
		a.brokerCmd(),
		a.proxyCmd(),
		a.functionsWorkerCmd(),
		a.functionsToolCmd(),
		a.sqlWorkerCmd(),
		a.sqlCmd(),
		a.adminCmd(),
		a.clientCmd(),
		a.perfCmd(),
		a.tokensCmd(),
		a.devCACmd(),
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
