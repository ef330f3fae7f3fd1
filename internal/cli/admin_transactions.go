package cli

import (
	"context"
	"fmt"
	"net/url"
	"strconv"
	"time"

	"github.com/spf13/cobra"
)

// transactionsCmd is `magnetar admin transactions ...`, after pulsar-admin transactions:
// the coordinators' stats, a transaction's metadata, slow transactions, and a topic's
// transaction buffer and pending-acknowledgement stats (/admin/v3/transactions).
func (ac *adminCLI) transactionsCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "transactions", Short: "Operations on transactions"}
	const base = "/admin/v3/transactions/"
	var coordinator int64
	var most, least uint64
	var topic, sub, slow string

	stats := ac.verb("coordinator-stats", "Get the stats of the transaction coordinators (--coordinator-id N for one)", 0,
		func(ctx context.Context, _ []string) ([]byte, error) {
			p := base + "coordinatorStats"
			if coordinator >= 0 {
				p += "?coordinatorId=" + strconv.FormatInt(coordinator, 10)
			}
			return ac.get(ctx, p)
		})
	stats.Flags().Int64VarP(&coordinator, "coordinator-id", "c", -1, "the coordinator id")

	txnID := func(c *cobra.Command) {
		c.Flags().Uint64VarP(&most, "most-sig-bits", "m", 0, "the most significant bits of the transaction id (required)")
		c.Flags().Uint64VarP(&least, "least-sig-bits", "l", 0, "the least significant bits of the transaction id (required)")
		_ = c.MarkFlagRequired("most-sig-bits")
		_ = c.MarkFlagRequired("least-sig-bits")
	}
	idPath := func() string { return strconv.FormatUint(most, 10) + "/" + strconv.FormatUint(least, 10) }
	topicFlag := func(c *cobra.Command) {
		c.Flags().StringVarP(&topic, "topic", "t", "", "the topic (required)")
		_ = c.MarkFlagRequired("topic")
	}
	subFlag := func(c *cobra.Command) {
		c.Flags().StringVarP(&sub, "sub-name", "s", "", "the subscription (required)")
		_ = c.MarkFlagRequired("sub-name")
	}
	// txnTopic is tenant/ns/topic of a persistent topic (transactions need one).
	txnTopic := func() (string, error) {
		tp, err := topicPath(topic)
		if err != nil {
			return "", err
		}
		const pfx = "persistent/"
		if len(tp) <= len(pfx) || tp[:len(pfx)] != pfx {
			return "", usageError(fmt.Errorf("transactions need a persistent topic, not %q", topic))
		}
		return tp[len(pfx):], nil
	}

	md := ac.verb("transaction-metadata", "Get the metadata of a transaction", 0,
		func(ctx context.Context, _ []string) ([]byte, error) {
			return ac.get(ctx, base+"transactionMetadata/"+idPath())
		})
	txnID(md)

	slowCmd := ac.verb("slow-transactions", "List the transactions open longer than --time", 0,
		func(ctx context.Context, _ []string) ([]byte, error) {
			d, err := time.ParseDuration(slow)
			if err != nil || d < 0 {
				return nil, usageError(fmt.Errorf("--time %q: want a duration such as 1s or 5m", slow))
			}
			p := base + "slowTransactions/" + strconv.FormatInt(d.Milliseconds(), 10)
			if coordinator >= 0 {
				p += "?coordinatorId=" + strconv.FormatInt(coordinator, 10)
			}
			return ac.get(ctx, p)
		})
	slowCmd.Flags().StringVarP(&slow, "time", "t", "", "how long a transaction has been open (required, e.g. 1s)")
	_ = slowCmd.MarkFlagRequired("time")
	slowCmd.Flags().Int64VarP(&coordinator, "coordinator-id", "c", -1, "only this coordinator's")

	buf := ac.verb("transaction-buffer-stats", "Get the transaction buffer stats of a topic", 0,
		func(ctx context.Context, _ []string) ([]byte, error) {
			tp, err := txnTopic()
			if err != nil {
				return nil, err
			}
			return ac.get(ctx, base+"transactionBufferStats/"+tp)
		})
	topicFlag(buf)

	pa := ac.verb("pending-ack-stats", "Get the pending-acknowledgement stats of a subscription", 0,
		func(ctx context.Context, _ []string) ([]byte, error) {
			tp, err := txnTopic()
			if err != nil {
				return nil, err
			}
			return ac.get(ctx, base+"pendingAckStats/"+tp+"/"+url.PathEscape(sub))
		})
	topicFlag(pa)
	subFlag(pa)

	inBuf := ac.verb("transaction-in-buffer-stats", "Get a transaction's state in a topic's transaction buffer", 0,
		func(ctx context.Context, _ []string) ([]byte, error) {
			tp, err := txnTopic()
			if err != nil {
				return nil, err
			}
			return ac.get(ctx, base+"transactionInBufferStats/"+tp+"/"+idPath())
		})
	txnID(inBuf)
	topicFlag(inBuf)

	inPA := ac.verb("transaction-in-pending-ack-stats", "Get a transaction's acknowledgements on a subscription", 0,
		func(ctx context.Context, _ []string) ([]byte, error) {
			tp, err := txnTopic()
			if err != nil {
				return nil, err
			}
			return ac.get(ctx, base+"transactionInPendingAckStats/"+tp+"/"+url.PathEscape(sub)+"/"+idPath())
		})
	txnID(inPA)
	topicFlag(inPA)
	subFlag(inPA)

	cmd.AddCommand(stats, md, slowCmd, buf, pa, inBuf, inPA)
	return cmd
}
