package cli

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
	"github.com/spf13/cobra"

	"github.com/magnetar-io/magnetar/internal/perf"
)

// perfProduceCmd is `magnetar perf produce`, pulsar-perf produce's flags.
func (a *app) perfProduceCmd() *cobra.Command {
	o := perf.ProduceOptions{}
	var topics int
	var batchDelayMs float64
	var jsonOut bool
	cmd := &cobra.Command{
		Use:   "produce <topic>",
		Short: "Publish at a rate (or as fast as possible); report msg/s, Mbit/s and publish latency",
		Long: "Publishes --size byte messages (the first 8 bytes are the send time, for consume's\n" +
			"end-to-end latency) with --num-producers producers on each of --num-topic topics.\n" +
			"Prints a line every --interval and a summary (--json for machines).",
		Args: cobra.ExactArgs(1),
	}
	fs := cmd.Flags()
	fs.StringVarP(&o.ServiceURL, "service-url", "u", "pulsar://localhost:6650", "broker service URL")
	fs.IntVarP(&topics, "num-topic", "t", 1, "number of topics (name-0 ... name-N-1 when more than one)")
	fs.IntVarP(&o.ProducersPerTopic, "num-producers", "n", 1, "producers per topic")
	fs.Float64VarP(&o.Rate, "rate", "r", 100, "total publish rate in msg/s (0: as fast as possible)")
	fs.IntVarP(&o.Size, "size", "s", 1024, "message size in bytes (at least 8)")
	fs.Int64VarP(&o.NumMessages, "num-messages", "m", 0, "stop after this many messages (0: no limit)")
	fs.DurationVar(&o.Duration, "test-duration", 0, "stop after this long (0: no limit)")
	fs.Float64VarP(&batchDelayMs, "batch-time-window", "b", 1, "batching delay in ms (0 disables batching)")
	fs.IntVar(&o.BatchMaxMessages, "batch-max-messages", 1000, "messages per batch at most")
	fs.IntVar(&o.BatchMaxBytes, "batch-max-bytes", 128*1024, "bytes per batch at most")
	fs.IntVarP(&o.MaxPending, "max-outstanding", "o", 1000, "messages in flight per producer at most")
	fs.DurationVar(&o.Interval, "interval", 10*time.Second, "print a line this often (0: only the summary)")
	fs.BoolVar(&jsonOut, "json", false, "print the summary as JSON")
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		logger, err := a.load(nil, nil)
		if err != nil {
			return err
		}
		o.Topics = perf.TopicNames(args[0], topics)
		o.BatchingDisabled = batchDelayMs <= 0
		o.BatchDelay = time.Duration(batchDelayMs * float64(time.Millisecond))
		o.Progress, o.Logger = cmd.OutOrStdout(), logger
		r, err := perf.RunProduce(cmd.Context(), o)
		if err != nil {
			return err
		}
		return printPerf(cmd, "produced", r, jsonOut)
	}
	return cmd
}

// perfConsumeCmd is `magnetar perf consume`, pulsar-perf consume's flags.
func (a *app) perfConsumeCmd() *cobra.Command {
	o := perf.ConsumeOptions{}
	var topics int
	var subType string
	var jsonOut bool
	cmd := &cobra.Command{
		Use:   "consume <topic>",
		Short: "Consume and acknowledge; report msg/s, Mbit/s and end-to-end latency",
		Long: "Subscribes --num-consumers consumers to each of --num-topic topics and measures the\n" +
			"end-to-end latency from the send time perf produce writes into each payload.",
		Args: cobra.ExactArgs(1),
	}
	fs := cmd.Flags()
	fs.StringVarP(&o.ServiceURL, "service-url", "u", "pulsar://localhost:6650", "broker service URL")
	fs.IntVarP(&topics, "num-topic", "t", 1, "number of topics (name-0 ... name-N-1 when more than one)")
	fs.IntVarP(&o.Consumers, "num-consumers", "n", 1, "consumers per topic")
	fs.StringVarP(&o.Subscription, "subscriptions", "s", "sub", "subscription name")
	fs.StringVar(&subType, "subscription-type", "Exclusive", "Exclusive, Shared, Failover or Key_Shared")
	fs.IntVarP(&o.ReceiverQueue, "receiver-queue-size", "q", 1000, "receiver queue size per consumer")
	fs.Int64VarP(&o.NumMessages, "num-messages", "m", 0, "stop after this many messages (0: no limit)")
	fs.DurationVar(&o.Duration, "test-duration", 0, "stop after this long (0: no limit)")
	fs.DurationVar(&o.Interval, "interval", 10*time.Second, "print a line this often (0: only the summary)")
	fs.BoolVar(&jsonOut, "json", false, "print the summary as JSON")
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		logger, err := a.load(nil, nil)
		if err != nil {
			return err
		}
		types := map[string]pulsar.SubscriptionType{"exclusive": pulsar.Exclusive, "shared": pulsar.Shared,
			"failover": pulsar.Failover, "key_shared": pulsar.KeyShared}
		t, ok := types[strings.ToLower(subType)]
		if !ok {
			return usageError(fmt.Errorf("--subscription-type must be Exclusive, Shared, Failover or Key_Shared, got %q", subType))
		}
		o.SubscriptionType = t
		o.Topics = perf.TopicNames(args[0], topics)
		o.Progress, o.Logger = cmd.OutOrStdout(), logger
		r, err := perf.RunConsume(cmd.Context(), o)
		if err != nil {
			return err
		}
		return printPerf(cmd, "received", r, jsonOut)
	}
	return cmd
}

// printPerf prints the final summary: pulsar-perf's aggregated line, or JSON.
func printPerf(cmd *cobra.Command, verb string, r perf.Result, jsonOut bool) error {
	out := cmd.OutOrStdout()
	if jsonOut {
		b, _ := json.Marshal(r)
		_, err := fmt.Fprintln(out, string(b))
		return err
	}
	fmt.Fprintf(out, "Aggregated throughput stats --- %d records %s --- %.1f msg/s --- %.2f Mbit/s --- %d errors\n",
		r.Messages, verb, r.MsgPerSec, r.MbitPerSec, r.Errors)
	fmt.Fprintf(out, "Aggregated latency stats --- Latency: mean: %.3f ms - med: %.3f - 95pct: %.3f - 99pct: %.3f - 99.9pct: %.3f - Max: %.3f\n",
		r.Mean, r.P50, r.P95, r.P99, r.P999, r.Max)
	if r.FirstError != "" {
		fmt.Fprintf(cmd.ErrOrStderr(), "first error: %s\n", r.FirstError)
	}
	return nil
}
