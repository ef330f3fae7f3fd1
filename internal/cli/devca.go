package cli

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/magnetar-io/magnetar/internal/auth"
)

// devCACmd is `magnetar dev-ca`: a throwaway certificate authority and certificates for
// trying TLS (and TLS authentication, by common name) on a development machine, as
// dev-cluster --tls makes its own. Never for real deployments: the CA key sits beside the
// certificates.
func (a *app) devCACmd() *cobra.Command {
	var dir, hosts, names string
	var validity time.Duration
	cmd := &cobra.Command{
		Use:   "dev-ca",
		Short: "Make a throwaway CA and certificates for development (TLS and certificate authentication)",
		Long: "Writes ca.pem (the certificate to trust: tlsTrustCertsFilePath) and, for each --names entry,\n" +
			"<name>.pem and <name>-key.pem, valid for --hosts, for servers and as client certificates\n" +
			"authenticating as role <name>. For development only: ca-key.pem is written beside them.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if dir == "" {
				return usageError(errors.New("--dir is required"))
			}
			ca, err := auth.NewCA(dir, "magnetar dev CA", validity)
			if err != nil {
				return err
			}
			hs := strings.Split(hosts, ",")
			for _, n := range strings.Split(names, ",") {
				if n = strings.TrimSpace(n); n == "" {
					continue
				}
				is, err := ca.Issue(auth.IssueOptions{Name: n, Hosts: hs, Validity: validity})
				if err != nil {
					return err
				}
				fmt.Fprintf(cmd.OutOrStdout(), "%s: %s %s\n", n, is.CertFile, is.KeyFile)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "CA: %s\n", ca.CertFile)
			return nil
		},
	}
	cmd.Flags().StringVar(&dir, "dir", "", "directory to write the CA and certificates into")
	cmd.Flags().StringVar(&hosts, "hosts", "localhost,127.0.0.1,::1", "host names and addresses the certificates are valid for")
	cmd.Flags().StringVar(&names, "names", "broker,admin", "certificates to issue (each also the role it authenticates as)")
	cmd.Flags().DurationVar(&validity, "validity", 30*24*time.Hour, "how long the CA and certificates are valid")
	return cmd
}
