package cli

import (
	"context"
	"net/http"
	"net/url"

	"github.com/spf13/cobra"
)

// addClusterVerbs adds the cluster verbs (bundles and their owners, load reports) to the
// admin groups of root. They talk to a `magnetar broker`; a standalone has no owners.
func (ac *adminCLI) addClusterVerbs(root *cobra.Command) {
	for _, g := range root.Commands() {
		switch g.Name() {
		case "namespaces":
			g.AddCommand(
				ac.verb("bundles <tenant/namespace>", "Get the bundle boundaries of a namespace", 1, func(ctx context.Context, args []string) ([]byte, error) {
					ns, err := nsPath(args[0])
					if err != nil {
						return nil, err
					}
					return ac.get(ctx, "/admin/v2/namespaces/"+ns+"/bundles")
				}),
				ac.verb("unload-bundle <tenant/namespace> <0xlower_0xupper>", "Unload one bundle: its owner releases it and the next lookup assigns it", 2, func(ctx context.Context, args []string) ([]byte, error) {
					ns, err := nsPath(args[0])
					if err != nil {
						return nil, err
					}
					return ac.send(ctx, http.MethodPut, "/admin/v2/namespaces/"+ns+"/"+url.PathEscape(args[1])+"/unload", nil)
				}),
				ac.verb("split-bundle <tenant/namespace> <0xlower_0xupper>", "Split a bundle in two halves (its topics move on their next lookup)", 2, func(ctx context.Context, args []string) ([]byte, error) {
					ns, err := nsPath(args[0])
					if err != nil {
						return nil, err
					}
					return ac.send(ctx, http.MethodPut, "/admin/v2/namespaces/"+ns+"/"+url.PathEscape(args[1])+"/split", nil)
				}),
			)
		case "brokers":
			g.AddCommand(
				ac.verb("bundle-owners", "List every owned bundle with its owner broker", 0, func(ctx context.Context, _ []string) ([]byte, error) {
					return ac.get(ctx, "/admin/v2/bundle-owners")
				}),
				ac.verb("load-reports", "List the live brokers with their load reports", 0, func(ctx context.Context, _ []string) ([]byte, error) {
					return ac.get(ctx, "/admin/v2/broker-load-reports")
				}),
			)
		}
	}
}
