package cli

import (
	"context"
	"fmt"
	"net/http"
	"strings"

	"github.com/spf13/cobra"
)

// compactionVerbs are `topics compact` and `topics compaction-status` (pulsar-admin's).
func (ac *adminCLI) compactionVerbs(tVerb func(use, short string, run func(ctx context.Context, p string) ([]byte, error)) *cobra.Command) []*cobra.Command {
	compact := tVerb("compact", "Compact a topic: keep the newest message of every key", func(ctx context.Context, p string) ([]byte, error) {
		if _, err := ac.send(ctx, http.MethodPut, p+"/compaction", nil); err != nil {
			return nil, err
		}
		name := strings.Replace(strings.TrimPrefix(p, "/admin/v2/"), "/", "://", 1)
		return []byte(fmt.Sprintf("Topic compaction requested for %s\n", name)), nil
	})
	status := processStatusVerb(tVerb, ac, "compaction-status", "Check the status of the last compaction of a topic", "/compaction", "Compaction")
	return []*cobra.Command{compact, status}
}
