package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"

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
	var wait bool
	status := tVerb("compaction-status", "Check the status of the last compaction of a topic", func(ctx context.Context, p string) ([]byte, error) {
		for {
			raw, err := ac.get(ctx, p+"/compaction")
			if err != nil {
				return nil, err
			}
			var st struct {
				Status    string `json:"status"`
				LastError string `json:"lastError"`
			}
			if err := json.Unmarshal(raw, &st); err != nil {
				return nil, fmt.Errorf("compaction status: %w", err)
			}
			switch {
			case st.Status == "RUNNING" && wait:
				select {
				case <-time.After(time.Second):
					continue
				case <-ctx.Done():
					return nil, ctx.Err()
				}
			case st.Status == "RUNNING":
				return []byte("Compaction is currently running\n"), nil
			case st.Status == "NOT_RUN":
				return []byte("Compaction has not been run\n"), nil
			case st.Status == "SUCCESS":
				return []byte("Compaction was a success\n"), nil
			}
			return nil, fmt.Errorf("error in compaction: %s", st.LastError)
		}
	})
	status.Flags().BoolVarP(&wait, "wait-complete", "w", false, "wait for the compaction to finish")
	return []*cobra.Command{compact, status}
}
