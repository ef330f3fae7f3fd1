package cli

import (
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/magnetar-io/magnetar/internal/devcluster"
)

// devClusterCmd is `magnetar dev-cluster`: a local cluster of child processes (3 metadata
// members, 3 bookies, 2 brokers; E/Qw/Qa 2/2/2) on loopback with data under one directory,
// until SIGINT/SIGTERM, then every child is stopped (brokers first).
func (a *app) devClusterCmd() *cobra.Command {
	var dir string
	var metadata, bookies, brokers int
	var brokerAddrs []string
	var brokerArgs string
	var useTLS bool
	cmd := &cobra.Command{
		Use:   "dev-cluster",
		Short: "Run a local development cluster (metadata members, bookies, brokers and a proxy) as child processes",
		Args:  cobra.NoArgs,
	}
	cmd.Flags().StringVar(&dir, "data-dir", "./data/dev-cluster", "directory for every process's data and log")
	cmd.Flags().IntVar(&metadata, "metadata-members", 3, "etcd members (magnetar metadata)")
	cmd.Flags().IntVar(&bookies, "bookies", 3, "bookies")
	cmd.Flags().IntVar(&brokers, "brokers", 2, "brokers")
	cmd.Flags().StringSliceVar(&brokerAddrs, "broker-addresses", nil, "host:port of each broker (host resolved to the address it binds, advertised by name); default: free loopback ports")
	cmd.Flags().BoolVar(&useTLS, "tls", false, "run every role on TLS with authentication and authorization (a throwaway CA and an admin token under <data-dir>/tls)")
	cmd.Flags().StringVar(&brokerArgs, "broker-args", "", "extra flags for every broker, space separated (e.g. \"--cluster-name=a --default-number-of-namespace-bundles=1\")")
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		logger, err := a.load(nil, nil)
		if err != nil {
			return err
		}
		if bookies < 2 || brokers < 1 || metadata < 1 {
			return usageError(fmt.Errorf("dev-cluster needs at least 1 metadata member, 2 bookies (E/Qw/Qa 2/2/2) and 1 broker"))
		}
		self, err := os.Executable()
		if err != nil {
			return err
		}
		c, err := devcluster.Start(cmd.Context(), devcluster.Options{
			Binary: self, Dir: dir, Metadata: metadata, Bookies: bookies, Brokers: brokers, Logger: logger,
			BrokerAddrs: brokerAddrs, BrokerArgs: strings.Fields(brokerArgs), TLS: useTLS,
		})
		if err != nil {
			return err
		}
		out := cmd.OutOrStdout()
		fmt.Fprintf(out, "magnetar dev-cluster ready (data and logs in %s)\n", dir)
		fmt.Fprintf(out, "  metadata  %s\n", c.MetadataURL)
		for _, p := range c.Bookies {
			fmt.Fprintf(out, "  %-9s %s\n", p.Name, p.Addr)
		}
		bin, web := "pulsar://", "http://"
		if useTLS {
			bin, web = "pulsar+ssl://", "https://"
		}
		for _, p := range c.Brokers {
			fmt.Fprintf(out, "  %-9s %s%s  %s%s\n", p.Name, bin, p.Addr, web, p.HTTP)
		}
		if c.Proxy != nil {
			fmt.Fprintf(out, "  %-9s %s%s  %s%s\n", c.Proxy.Name, bin, c.Proxy.Addr, web, c.Proxy.HTTP)
		}
		fmt.Fprintf(out, "  clients   %s\n", c.ClientServiceURL())
		if c.TLS != nil {
			fmt.Fprintf(out, "  CA        %s\n  admin     token %s (superuser)\n  tools     magnetar --config %s admin tenants list\n",
				c.TLS.CAFile(), c.TLS.AdminToken, c.TLS.ClientConf)
		}
		<-cmd.Context().Done()
		fmt.Fprintln(out, "stopping the dev-cluster")
		c.Stop(30 * time.Second)
		return nil
	}
	return cmd
}
