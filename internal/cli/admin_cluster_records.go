package cli

import (
	"context"
	"net/http"
	"net/url"

	"github.com/spf13/cobra"
)

// addClusterRecordVerbs adds pulsar-admin's cluster record verbs (create, update, delete,
// peer clusters) to the clusters group and get-clusters / set-clusters (replication
// clusters) to the namespaces group. Flags carry pulsar-admin's names.
func (ac *adminCLI) addClusterRecordVerbs(admin *cobra.Command) {
	for _, g := range admin.Commands() {
		switch g.Name() {
		case "clusters":
			g.AddCommand(ac.clusterRecordVerbs()...)
		case "namespaces":
			g.AddCommand(ac.namespaceClusterVerbs()...)
		}
	}
}

func (ac *adminCLI) clusterRecordVerbs() []*cobra.Command {
	var data struct {
		url, urlTLS, brokerURL, brokerURLTLS string
	}
	body := func() map[string]string {
		return map[string]string{"serviceUrl": data.url, "serviceUrlTls": data.urlTLS,
			"brokerServiceUrl": data.brokerURL, "brokerServiceUrlTls": data.brokerURLTLS}
	}
	create := ac.verb("create <cluster>", "Create a cluster record", 1, func(ctx context.Context, args []string) ([]byte, error) {
		return ac.send(ctx, http.MethodPut, "/admin/v2/clusters/"+url.PathEscape(args[0]), body())
	})
	update := ac.verb("update <cluster>", "Replace a cluster's URLs", 1, func(ctx context.Context, args []string) ([]byte, error) {
		return ac.send(ctx, http.MethodPost, "/admin/v2/clusters/"+url.PathEscape(args[0]), body())
	})
	for _, c := range []*cobra.Command{create, update} {
		c.Flags().StringVar(&data.url, "url", "", "HTTP service URL (http://host:8080)")
		c.Flags().StringVar(&data.urlTLS, "url-secure", "", "HTTPS service URL")
		c.Flags().StringVar(&data.brokerURL, "broker-url", "", "binary protocol URL (pulsar://host:6650)")
		c.Flags().StringVar(&data.brokerURLTLS, "broker-url-secure", "", "binary protocol TLS URL")
	}
	var peers []string
	updatePeers := ac.verb("update-peer-clusters <cluster>", "Set a cluster's peer clusters", 1, func(ctx context.Context, args []string) ([]byte, error) {
		return ac.send(ctx, http.MethodPost, "/admin/v2/clusters/"+url.PathEscape(args[0])+"/peers", nonNil(peers))
	})
	updatePeers.Flags().StringSliceVar(&peers, "peer-clusters", nil, "comma-separated peer cluster names")
	_ = updatePeers.MarkFlagRequired("peer-clusters")
	return []*cobra.Command{
		create, update,
		ac.verb("delete <cluster>", "Delete a cluster record (no tenant may allow it)", 1, func(ctx context.Context, args []string) ([]byte, error) {
			return ac.send(ctx, http.MethodDelete, "/admin/v2/clusters/"+url.PathEscape(args[0]), nil)
		}),
		ac.verb("get-peer-clusters <cluster>", "Get a cluster's peer clusters", 1, func(ctx context.Context, args []string) ([]byte, error) {
			return ac.get(ctx, "/admin/v2/clusters/"+url.PathEscape(args[0])+"/peers")
		}),
		updatePeers,
	}
}

func (ac *adminCLI) namespaceClusterVerbs() []*cobra.Command {
	var clusters []string
	set := ac.verb("set-clusters <tenant/namespace>", "Set the namespace's replication clusters", 1, func(ctx context.Context, args []string) ([]byte, error) {
		ns, err := nsPath(args[0])
		if err != nil {
			return nil, err
		}
		return ac.send(ctx, http.MethodPost, "/admin/v2/namespaces/"+ns+"/replication", nonNil(clusters))
	})
	set.Flags().StringSliceVarP(&clusters, "clusters", "c", nil, "comma-separated cluster names")
	_ = set.MarkFlagRequired("clusters")
	return []*cobra.Command{
		ac.verb("get-clusters <tenant/namespace>", "Get the namespace's replication clusters", 1, func(ctx context.Context, args []string) ([]byte, error) {
			ns, err := nsPath(args[0])
			if err != nil {
				return nil, err
			}
			return ac.get(ctx, "/admin/v2/namespaces/"+ns+"/replication")
		}),
		set,
	}
}
