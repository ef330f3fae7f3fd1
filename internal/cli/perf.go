package cli

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/magnetar-io/magnetar/internal/perf"
)

// perfCmd is `magnetar perf`: load generators. `perf bookie` drives one bookie over TCP;
// produce and consume (pulsar-perf style, perf_client.go) drive a broker.
func (a *app) perfCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "perf",
		Short: "Generate load and report throughput and latency (pulsar-perf style)",
		// Unknown subcommands (produce, consume) are not available yet: say so with exit 2
		// instead of a usage dump.
		DisableFlagParsing: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 || args[0] == "-h" || args[0] == "--help" {
				return cmd.Help()
			}
			return errNotAvailable("perf " + strings.Join(args, " "))
		},
	}
	cmd.AddCommand(a.perfBookieCmd(), a.perfProduceCmd(), a.perfConsumeCmd())
	return cmd
}

func (a *app) perfBookieCmd() *cobra.Command {
	var (
		addr      string
		inFlight  []int
		sizes     []int
		duration  time.Duration
		timeout   time.Duration
		interval  time.Duration
		probeDir  string
		probeTime time.Duration
		metrics   string
	)
	cmd := &cobra.Command{
		Use:   "bookie",
		Short: "Drive a bookie over TCP with N adds in flight; report adds/s, MB/s and add latency",
		Long: "Adds entries of each --size with each --in-flight count to a new ledger on the bookie at\n" +
			"--bookie for --duration, and prints one result row per combination. With --probe-dir it\n" +
			"first measures the raw write+fdatasync rate of that directory's disk for comparison.",
		Args: cobra.NoArgs,
	}
	fs := cmd.Flags()
	fs.StringVar(&addr, "bookie", "127.0.0.1:3181", "bookie address host:port")
	fs.IntSliceVar(&inFlight, "in-flight", []int{16}, "adds outstanding (list: one run per value)")
	fs.IntSliceVar(&sizes, "size", []int{1024}, "entry size in bytes (list: one run per value)")
	fs.DurationVar(&duration, "duration", 5*time.Second, "length of each run")
	fs.DurationVar(&timeout, "timeout", 30*time.Second, "per-add timeout")
	fs.DurationVar(&interval, "interval", 0, "print progress this often (0: only results)")
	fs.StringVar(&probeDir, "probe-dir", "", "directory on the bookie's journal disk for a raw fdatasync probe")
	fs.DurationVar(&probeTime, "probe-duration", 2*time.Second, "length of each probe")
	fs.StringVar(&metrics, "bookie-metrics", "", "the bookie's /metrics URL; adds an entries-per-fsync column")
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		logger, err := a.load(nil, nil)
		if err != nil {
			return err
		}
		out := cmd.OutOrStdout()
		if probeDir != "" {
			fmt.Fprintf(out, "raw write+fdatasync probe of %s:\n", probeDir)
			fmt.Fprintf(out, "%10s %10s %10s %10s %10s\n", "block", "syncs/s", "MB/s", "p50 ms", "p99 ms")
			for _, bs := range uniqueSorted(append(append([]int{}, sizes...), 1<<20)) {
				r, err := perf.ProbeSync(probeDir, max(bs, 1), probeTime)
				if err != nil {
					return err
				}
				fmt.Fprintf(out, "%10d %10.0f %10.1f %10.3f %10.3f\n", r.BlockSize, r.SyncsPerSec, r.MBPerSec, ms(r.P50), ms(r.P99))
			}
			fmt.Fprintln(out)
		}
		fmt.Fprintf(out, "bookie %s, %v per run:\n", addr, duration)
		header := fmt.Sprintf("%10s %9s %10s %9s %9s %9s %9s %8s %10s\n", "size", "in-flight", "adds/s", "MB/s", "p50 ms", "p99 ms", "p99.9 ms", "errors", "entries/fsync")
		fmt.Fprint(out, header)
		for _, size := range sizes {
			for _, n := range inFlight {
				var progress io.Writer
				if interval > 0 {
					progress = cmd.ErrOrStderr()
				}
				before, err := groupingStats(cmd.Context(), metrics)
				if err != nil {
					return err
				}
				r, err := perf.RunBookie(cmd.Context(), perf.BookieOptions{
					Addr: addr, InFlight: n, EntrySize: size, Duration: duration, Timeout: timeout,
					Interval: interval, Progress: progress, Logger: logger,
				})
				if err != nil {
					return err
				}
				after, err := groupingStats(cmd.Context(), metrics)
				if err != nil {
					return err
				}
				perSync := "-"
				if syncs := after[groupCount] - before[groupCount]; syncs > 0 {
					perSync = fmt.Sprintf("%.1f", (after[groupSum]-before[groupSum])/syncs)
				}
				fmt.Fprintf(out, "%10d %9d %10.0f %9.1f %9.3f %9.3f %9.3f %8d %13s\n", size, n, r.AddsPerSec, r.MBPerSec, ms(r.P50), ms(r.P99), ms(r.P999), r.Errors, perSync)
				if r.FirstError != nil {
					fmt.Fprintf(cmd.ErrOrStderr(), "first error: %v\n", r.FirstError)
				}
				if cmd.Context().Err() != nil {
					return cmd.Context().Err()
				}
			}
		}
		return nil
	}
	return cmd
}

func ms(us int64) float64 { return float64(us) / 1000 }

// The storage's histogram of entries per journal fsync (bookie_journal_force_write_grouping_count).
const (
	groupSum   = "bookie_journal_force_write_grouping_count_sum"
	groupCount = "bookie_journal_force_write_grouping_count_count"
)

// groupingStats scrapes the journal grouping histogram; nothing when url is empty.
func groupingStats(ctx context.Context, url string) (map[string]float64, error) {
	if url == "" {
		return map[string]float64{}, nil
	}
	return perf.ScrapeSum(ctx, url, groupSum, groupCount)
}

func uniqueSorted(xs []int) []int {
	xs = slices.Clone(xs)
	slices.Sort(xs)
	return slices.Compact(xs)
}
