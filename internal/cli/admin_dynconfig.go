package cli

import (
	"context"
	"net/http"
	"net/url"

	"github.com/spf13/cobra"
)

// dynamicConfigVerbs are pulsar-admin's `brokers update-dynamic-config --config K --value V`
// and `brokers delete-dynamic-config --config K` (the keys: `brokers list-dynamic-config`).
func (ac *adminCLI) dynamicConfigVerbs() []*cobra.Command {
	var key, value string
	update := ac.verb("update-dynamic-config", "Set a dynamic configuration key on every broker (stored in the metadata store)", 0,
		func(ctx context.Context, _ []string) ([]byte, error) {
			return ac.send(ctx, http.MethodPost, "/admin/v2/brokers/configuration/"+url.PathEscape(key)+"/"+url.PathEscape(value), nil)
		})
	update.Flags().StringVar(&key, "config", "", "configuration key (see list-dynamic-config)")
	update.Flags().StringVar(&value, "value", "", "new value")
	_ = update.MarkFlagRequired("config")
	_ = update.MarkFlagRequired("value")
	del := ac.verb("delete-dynamic-config", "Remove a dynamic configuration override (back to each broker's start value)", 0,
		func(ctx context.Context, _ []string) ([]byte, error) {
			return ac.send(ctx, http.MethodDelete, "/admin/v2/brokers/configuration/"+url.PathEscape(key), nil)
		})
	del.Flags().StringVar(&key, "config", "", "configuration key")
	_ = del.MarkFlagRequired("config")
	return []*cobra.Command{update, del}
}
