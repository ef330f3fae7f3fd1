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

// offloadVerbs are `topics offload` and `topics offload-status` (pulsar-admin's).
func (ac *adminCLI) offloadVerbs(tVerb func(use, short string, run func(ctx context.Context, p string) ([]byte, error)) *cobra.Command) []*cobra.Command {
	var threshold string
	offload := tVerb("offload", "Offload the oldest ledgers of a topic, keeping --size-threshold bytes on the bookies", func(ctx context.Context, p string) ([]byte, error) {
		keep, err := parseSizeBytes(threshold)
		if err != nil {
			return nil, usageError(fmt.Errorf("--size-threshold: %w", err))
		}
		raw, err := ac.get(ctx, p+"/internalStats")
		if err != nil {
			return nil, err
		}
		var st struct {
			Ledgers []struct {
				LedgerID int64 `json:"ledgerId"`
				Size     int64 `json:"size"`
			} `json:"ledgers"`
		}
		if err := json.Unmarshal(raw, &st); err != nil {
			return nil, fmt.Errorf("internal stats: %w", err)
		}
		// Keep the newest ledgers whose sizes add up to the threshold; offload before them.
		var kept int64
		before := int64(-1)
		for i := len(st.Ledgers) - 1; i > 0; i-- {
			kept += st.Ledgers[i].Size
			if kept > keep {
				before = st.Ledgers[i].LedgerID
				break
			}
		}
		if before < 0 {
			return []byte("Nothing to offload\n"), nil
		}
		id := map[string]int64{"ledgerId": before, "entryId": 0, "partitionIndex": -1}
		if _, err := ac.send(ctx, http.MethodPut, p+"/offload", id); err != nil {
			return nil, err
		}
		return []byte(fmt.Sprintf("Offload triggered for %s for messages before %d:0:-1\n", p, before)), nil
	})
	offload.Flags().StringVarP(&threshold, "size-threshold", "s", "", "bytes to keep on the bookies (e.g. 10M, 1G)")
	_ = offload.MarkFlagRequired("size-threshold")

	status := processStatusVerb(tVerb, ac, "offload-status", "Check the status of the last offload of a topic", "/offload", "Offload")
	return []*cobra.Command{offload, status}
}

// processStatusVerb is a pulsar-admin status verb of a long-running topic process (Pulsar's
// LongRunningProcessStatus at GET p+rest): offload-status and compaction-status, with -w to
// wait for a running one. name is the process as its messages say it ("Offload").
func processStatusVerb(tVerb func(use, short string, run func(ctx context.Context, p string) ([]byte, error)) *cobra.Command,
	ac *adminCLI, use, short, rest, name string) *cobra.Command {
	lower := strings.ToLower(name)
	var wait bool
	status := tVerb(use, short, func(ctx context.Context, p string) ([]byte, error) {
		for {
			raw, err := ac.get(ctx, p+rest)
			if err != nil {
				return nil, err
			}
			var st struct {
				Status    string `json:"status"`
				LastError string `json:"lastError"`
			}
			if err := json.Unmarshal(raw, &st); err != nil {
				return nil, fmt.Errorf("%s status: %w", lower, err)
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
				return []byte(name + " is currently running\n"), nil
			case st.Status == "NOT_RUN":
				return []byte(name + " has not been run\n"), nil
			case st.Status == "SUCCESS":
				return []byte(name + " was a success\n"), nil
			}
			return nil, fmt.Errorf("error in %s: %s", lower, st.LastError)
		}
	})
	status.Flags().BoolVarP(&wait, "wait-complete", "w", false, "wait for the "+lower+" to finish")
	return status
}
