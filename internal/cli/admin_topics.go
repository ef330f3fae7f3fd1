package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/spf13/cobra"

	"github.com/magnetar-io/magnetar/internal/wire"
	"github.com/magnetar-io/magnetar/internal/wire/pb"
)

func (ac *adminCLI) namespacesCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "namespaces", Short: "Operations about namespaces"}
	nsVerb := func(use, short string, run func(ctx context.Context, ns string) ([]byte, error)) *cobra.Command {
		return ac.verb(use+" <tenant/namespace>", short, 1, func(ctx context.Context, args []string) ([]byte, error) {
			ns, err := nsPath(args[0])
			if err != nil {
				return nil, err
			}
			return run(ctx, "/admin/v2/namespaces/"+ns)
		})
	}
	var retSize, retTime string
	setRetention := nsVerb("set-retention", "Set the retention policy", func(ctx context.Context, p string) ([]byte, error) {
		mb, err := parseSizeMB(retSize)
		if err != nil {
			return nil, usageError(fmt.Errorf("--size: %w", err))
		}
		mins, err := parseMinutes(retTime)
		if err != nil {
			return nil, usageError(fmt.Errorf("--time: %w", err))
		}
		return ac.send(ctx, http.MethodPost, p+"/retention", map[string]int64{"retentionSizeInMB": mb, "retentionTimeInMinutes": mins})
	})
	setRetention.Flags().StringVarP(&retSize, "size", "s", "", "retention size limit: -1 (infinite), 0, or a size like 100M, 10G")
	setRetention.Flags().StringVarP(&retTime, "time", "t", "", "retention time: -1 (infinite), 0, or like 30m, 12h, 3d")
	_ = setRetention.MarkFlagRequired("size")
	_ = setRetention.MarkFlagRequired("time")
	var ttl int
	setTTL := nsVerb("set-message-ttl", "Set the message TTL", func(ctx context.Context, p string) ([]byte, error) {
		return ac.send(ctx, http.MethodPost, p+"/messageTTL", ttl)
	})
	setTTL.Flags().IntVar(&ttl, "messageTTL", 0, "message TTL in seconds")
	_ = setTTL.MarkFlagRequired("messageTTL")
	var enable, disable bool
	setDedup := nsVerb("set-deduplication", "Enable or disable message deduplication", func(ctx context.Context, p string) ([]byte, error) {
		if enable == disable {
			return nil, usageError(fmt.Errorf("give exactly one of --enable and --disable"))
		}
		return ac.send(ctx, http.MethodPost, p+"/deduplication", enable)
	})
	setDedup.Flags().BoolVarP(&enable, "enable", "e", false, "enable deduplication")
	setDedup.Flags().BoolVarP(&disable, "disable", "d", false, "disable deduplication")
	// -b/--bundle narrows clear-backlog and unsubscribe to one bundle ({lower}_{upper}), as
	// pulsar-admin's; the broker sends either form to the owners (ownership/nsverbs.go).
	var clearSub, clearBundle string
	clearNS := nsVerb("clear-backlog", "Clear the backlog of every subscription (or one, -s) of a namespace (or one bundle, -b)", func(ctx context.Context, p string) ([]byte, error) {
		p += bundlePath(clearBundle) + "/clearBacklog"
		if clearSub != "" {
			p += "/" + url.PathEscape(clearSub)
		}
		return ac.send(ctx, http.MethodPost, p, nil)
	})
	clearNS.Flags().StringVarP(&clearSub, "sub", "s", "", "only this subscription")
	clearNS.Flags().StringVarP(&clearBundle, "bundle", "b", "", "only this bundle ({start}_{end}, e.g. 0x00000000_0x40000000)")
	var unsubSub, unsubBundle string
	unsubNS := nsVerb("unsubscribe", "Delete a subscription from every topic of a namespace (or one bundle, -b)", func(ctx context.Context, p string) ([]byte, error) {
		return ac.send(ctx, http.MethodPost, p+bundlePath(unsubBundle)+"/unsubscribe/"+url.PathEscape(unsubSub), nil)
	})
	unsubNS.Flags().StringVarP(&unsubSub, "sub", "s", "", "the subscription")
	unsubNS.Flags().StringVarP(&unsubBundle, "bundle", "b", "", "only this bundle ({start}_{end})")
	_ = unsubNS.MarkFlagRequired("sub")
	var forceDelete bool
	deleteNS := nsVerb("delete", "Delete a namespace (with its topics: -f, when the broker allows it)", func(ctx context.Context, p string) ([]byte, error) {
		if forceDelete {
			p += "?force=true"
		}
		return ac.send(ctx, http.MethodDelete, p, nil)
	})
	deleteNS.Flags().BoolVarP(&forceDelete, "force", "f", false, "delete its topics first, disconnecting their clients (forceDeleteNamespaceAllowed)")
	var delBundle string
	var delBundleForce bool
	deleteBundle := nsVerb("delete-bundle", "Release one bundle (-b); refused while it has topics unless -f", func(ctx context.Context, p string) ([]byte, error) {
		p += bundlePath(delBundle)
		if delBundleForce {
			p += "?force=true"
		}
		return ac.send(ctx, http.MethodDelete, p, nil)
	})
	deleteBundle.Flags().StringVarP(&delBundle, "bundle", "b", "", "the bundle ({start}_{end})")
	deleteBundle.Flags().BoolVarP(&delBundleForce, "force", "f", false, "release it even with topics (they are unloaded, not deleted)")
	_ = deleteBundle.MarkFlagRequired("bundle")
	cmd.AddCommand(
		ac.verb("list <tenant>", "List the namespaces of a tenant", 1, func(ctx context.Context, args []string) ([]byte, error) {
			return ac.get(ctx, "/admin/v2/namespaces/"+url.PathEscape(args[0]))
		}),
		nsVerb("topics", "List the topics of a namespace", func(ctx context.Context, p string) ([]byte, error) {
			return ac.get(ctx, p+"/topics")
		}),
		nsVerb("create", "Create a namespace", func(ctx context.Context, p string) ([]byte, error) {
			return ac.send(ctx, http.MethodPut, p, nil)
		}),
		deleteNS, deleteBundle,
		nsVerb("policies", "Get the policies of a namespace", func(ctx context.Context, p string) ([]byte, error) {
			return ac.get(ctx, p)
		}),
		nsVerb("unload", "Unload every topic of a namespace", func(ctx context.Context, p string) ([]byte, error) {
			return ac.send(ctx, http.MethodPut, p+"/unload", nil)
		}),
		clearNS, unsubNS,
		nsVerb("get-retention", "Get the retention policy", func(ctx context.Context, p string) ([]byte, error) {
			return ac.get(ctx, p+"/retention")
		}),
		setRetention,
		nsVerb("get-message-ttl", "Get the message TTL", func(ctx context.Context, p string) ([]byte, error) {
			return ac.get(ctx, p+"/messageTTL")
		}),
		setTTL,
		nsVerb("get-deduplication", "Get the deduplication setting", func(ctx context.Context, p string) ([]byte, error) {
			return ac.get(ctx, p+"/deduplication")
		}),
		setDedup,
	)
	cmd.AddCommand(ac.namespacePolicyVerbs(nsVerb)...)
	cmd.AddCommand(ac.scalarVerbs(namespaceScalarPolicies, nsVerb)...)        // admin_policy_verbs.go
	cmd.AddCommand(ac.offloadPolicyVerbs(nsVerb, "removeOffloadPolicies")...) // admin_policy_verbs.go
	return cmd
}

// parseSizeMB reads pulsar-admin sizes: -1, or a number with an optional K, M, G or T suffix,
// in megabytes (a plain number is bytes, as pulsar-admin reads it).
func parseSizeMB(s string) (int64, error) {
	if s == "-1" {
		return -1, nil
	}
	b, err := parseSizeBytes(s)
	return b / (1 << 20), err
}

// parseRelTime reads pulsar-admin durations: a number with s, m, h, d or w.
func parseRelTime(s string) (time.Duration, error) {
	units := map[byte]time.Duration{'s': time.Second, 'm': time.Minute, 'h': time.Hour, 'd': 24 * time.Hour, 'w': 7 * 24 * time.Hour}
	if len(s) < 2 {
		return 0, fmt.Errorf("invalid time %q: want a number and s, m, h, d or w", s)
	}
	u, ok := units[s[len(s)-1]]
	v, err := strconv.ParseInt(s[:len(s)-1], 10, 64)
	if !ok || err != nil || v < 0 || v > int64(math.MaxInt64/u) {
		return 0, fmt.Errorf("invalid time %q: want a number and s, m, h, d or w", s)
	}
	return time.Duration(v) * u, nil
}

func parseMinutes(s string) (int64, error) {
	if s == "-1" || s == "0" {
		return strconv.ParseInt(s, 10, 64)
	}
	d, err := parseRelTime(s)
	return int64(d / time.Minute), err
}

// messageIDArg reads latest, earliest or ledgerId:entryId[:partition].
func messageIDArg(s string) (map[string]int64, error) {
	switch s {
	case "latest":
		return map[string]int64{"ledgerId": 1<<63 - 1, "entryId": 1<<63 - 1, "partitionIndex": -1}, nil
	case "earliest":
		return map[string]int64{"ledgerId": -1, "entryId": -1, "partitionIndex": -1}, nil
	}
	parts := strings.Split(s, ":")
	if len(parts) < 2 || len(parts) > 3 {
		return nil, fmt.Errorf("invalid message id %q: want latest, earliest or ledgerId:entryId", s)
	}
	id := map[string]int64{"partitionIndex": -1}
	for i, k := range []string{"ledgerId", "entryId", "partitionIndex"}[:len(parts)] {
		v, err := strconv.ParseInt(parts[i], 10, 64)
		if err != nil {
			return nil, fmt.Errorf("invalid message id %q: %w", s, err)
		}
		id[k] = v
	}
	return id, nil
}

func (ac *adminCLI) topicsCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "topics", Short: "Operations about topics and their subscriptions"}
	// tVerb is a verb on one topic: its path is /admin/v2/<domain>/<tenant>/<ns>/<topic>.
	tVerb := func(use, short string, run func(ctx context.Context, p string) ([]byte, error)) *cobra.Command {
		return ac.verb(use+" <topic>", short, 1, func(ctx context.Context, args []string) ([]byte, error) {
			tp, err := topicPath(args[0])
			if err != nil {
				return nil, err
			}
			return run(ctx, "/admin/v2/"+tp)
		})
	}
	var partitions int
	createPart := tVerb("create-partitioned-topic", "Create a partitioned topic", func(ctx context.Context, p string) ([]byte, error) {
		return ac.send(ctx, http.MethodPut, p+"/partitions", partitions)
	})
	updatePart := tVerb("update-partitioned-topic", "Grow a partitioned topic", func(ctx context.Context, p string) ([]byte, error) {
		return ac.send(ctx, http.MethodPost, p+"/partitions", partitions)
	})
	for _, c := range []*cobra.Command{createPart, updatePart} {
		c.Flags().IntVarP(&partitions, "partitions", "p", 0, "number of partitions")
		_ = c.MarkFlagRequired("partitions")
	}
	var force bool
	del := tVerb("delete", "Delete a non-partitioned topic", func(ctx context.Context, p string) ([]byte, error) {
		return ac.send(ctx, http.MethodDelete, p+"?force="+strconv.FormatBool(force), nil)
	})
	delPart := tVerb("delete-partitioned-topic", "Delete a partitioned topic and its partitions", func(ctx context.Context, p string) ([]byte, error) {
		return ac.send(ctx, http.MethodDelete, p+"/partitions?force="+strconv.FormatBool(force), nil)
	})
	for _, c := range []*cobra.Command{del, delPart} {
		c.Flags().BoolVarP(&force, "force", "f", false, "disconnect producers and consumers first")
	}
	var perPartition bool
	pstats := tVerb("partitioned-stats", "Get the stats of a partitioned topic", func(ctx context.Context, p string) ([]byte, error) {
		return ac.get(ctx, p+"/partitioned-stats?perPartition="+strconv.FormatBool(perPartition))
	})
	pstats.Flags().BoolVar(&perPartition, "per-partition", false, "also show each partition")

	// Subscription verbs (pulsar-admin keeps them in the topics group).
	var sub, msgID, relTime string
	var count int64
	var expireSecs int64
	subFlag := func(c *cobra.Command) *cobra.Command {
		c.Flags().StringVarP(&sub, "subscription", "s", "", "subscription name")
		_ = c.MarkFlagRequired("subscription")
		return c
	}
	subPath := func(p string) string { return p + "/subscription/" + url.PathEscape(sub) }
	// startID is create-subscription's own: sharing msgID with reset-cursor made the later
	// flag definition's default ("") replace "latest".
	var startID string
	createSub := subFlag(tVerb("create-subscription", "Create a subscription at a position", func(ctx context.Context, p string) ([]byte, error) {
		id, err := messageIDArg(startID)
		if err != nil {
			return nil, usageError(err)
		}
		return ac.send(ctx, http.MethodPut, subPath(p), id)
	}))
	createSub.Flags().StringVarP(&startID, "messageId", "m", "latest", "start position: latest, earliest or ledgerId:entryId")
	unsub := subFlag(tVerb("unsubscribe", "Delete a subscription", func(ctx context.Context, p string) ([]byte, error) {
		return ac.send(ctx, http.MethodDelete, subPath(p)+"?force="+strconv.FormatBool(force), nil)
	}))
	unsub.Flags().BoolVarP(&force, "force", "f", false, "disconnect its consumers first")
	skip := subFlag(tVerb("skip", "Skip messages of a subscription", func(ctx context.Context, p string) ([]byte, error) {
		return ac.send(ctx, http.MethodPost, subPath(p)+"/skip/"+strconv.FormatInt(count, 10), nil)
	}))
	skip.Flags().Int64VarP(&count, "count", "n", 0, "number of messages to skip")
	_ = skip.MarkFlagRequired("count")
	expire := subFlag(tVerb("expire-messages", "Expire the messages older than a time", func(ctx context.Context, p string) ([]byte, error) {
		return ac.send(ctx, http.MethodPost, subPath(p)+"/expireMessages/"+strconv.FormatInt(expireSecs, 10), nil)
	}))
	expire.Flags().Int64VarP(&expireSecs, "expireTime", "t", 0, "expire messages older than this many seconds")
	reset := subFlag(tVerb("reset-cursor", "Reset a subscription to a time or a message id", func(ctx context.Context, p string) ([]byte, error) {
		switch {
		case (relTime == "") == (msgID == ""):
			return nil, usageError(fmt.Errorf("give exactly one of --time and --messageId"))
		case msgID != "":
			id, err := messageIDArg(msgID)
			if err != nil {
				return nil, usageError(err)
			}
			return ac.send(ctx, http.MethodPost, subPath(p)+"/resetcursor", id)
		}
		d, err := parseRelTime(relTime)
		if err != nil {
			return nil, usageError(fmt.Errorf("--time: %w", err))
		}
		ts := time.Now().Add(-d).UnixMilli()
		return ac.send(ctx, http.MethodPost, subPath(p)+"/resetcursor/"+strconv.FormatInt(ts, 10), nil)
	}))
	reset.Flags().StringVarP(&relTime, "time", "t", "", "go back this far: like 10m, 3h, 2d")
	reset.Flags().StringVarP(&msgID, "messageId", "m", "", "the message id to deliver next: ledgerId:entryId, earliest or latest")
	peek := subFlag(ac.verbRaw("peek-messages <topic>", "Show the next messages of a subscription without consuming them", func(ctx context.Context, cmd *cobra.Command, args []string) error {
		tp, err := topicPath(args[0])
		if err != nil {
			return err
		}
		// Positions count entries, --count counts messages: a batch entry holds several.
		printed := int64(0)
		for k := int64(1); printed < count; k++ {
			b, h, err := ac.call(ctx, http.MethodGet, subPath("/admin/v2/"+tp)+"/position/"+strconv.FormatInt(k, 10), nil)
			if err != nil {
				if printed > 0 && strings.Contains(err.Error(), " 404 ") {
					return nil // fewer messages than asked for
				}
				return err
			}
			printed += int64(printPeeked(cmd, ac.output, h, b, int(count-printed)))
		}
		return nil
	}))
	peek.Flags().Int64VarP(&count, "count", "n", 1, "number of messages")
	var initial string
	var msgPos int64
	examine := ac.verbRaw("examine-message <topic>", "Show the n-th message from the oldest or newest", func(ctx context.Context, cmd *cobra.Command, args []string) error {
		tp, err := topicPath(args[0])
		if err != nil {
			return err
		}
		q := url.Values{"initialPosition": {initial}, "messagePosition": {strconv.FormatInt(msgPos, 10)}}
		b, h, err := ac.call(ctx, http.MethodGet, "/admin/v2/"+tp+"/examinemessage?"+q.Encode(), nil)
		if err != nil {
			return err
		}
		printPeeked(cmd, ac.output, h, b, math.MaxInt)
		return nil
	})
	examine.Flags().StringVarP(&initial, "initialPosition", "i", "latest", "count from earliest or latest")
	examine.Flags().Int64VarP(&msgPos, "messagePosition", "m", 1, "position from the initial position (from 1)")

	cmd.AddCommand(
		ac.verb("list <tenant/namespace>", "List the topics of a namespace", 1, func(ctx context.Context, args []string) ([]byte, error) {
			ns, err := nsPath(args[0])
			if err != nil {
				return nil, err
			}
			return ac.get(ctx, "/admin/v2/namespaces/"+ns+"/topics?mode=ALL")
		}),
		ac.verb("list-partitioned-topics <tenant/namespace>", "List the partitioned topics of a namespace", 1, func(ctx context.Context, args []string) ([]byte, error) {
			ns, err := nsPath(args[0])
			if err != nil {
				return nil, err
			}
			return ac.get(ctx, "/admin/v2/persistent/"+ns+"/partitioned")
		}),
		tVerb("create", "Create a non-partitioned topic", func(ctx context.Context, p string) ([]byte, error) {
			return ac.send(ctx, http.MethodPut, p, nil)
		}),
		createPart, updatePart, del, delPart,
		tVerb("get-partitioned-topic-metadata", "Get the partition count", func(ctx context.Context, p string) ([]byte, error) {
			return ac.get(ctx, p+"/partitions")
		}),
		tVerb("stats", "Get the stats of a topic", func(ctx context.Context, p string) ([]byte, error) {
			return ac.get(ctx, p+"/stats")
		}),
		pstats,
		tVerb("stats-internal", "Get the internal stats (managed ledger) of a topic", func(ctx context.Context, p string) ([]byte, error) {
			return ac.get(ctx, p+"/internalStats")
		}),
		tVerb("partitioned-stats-internal", "Get the internal stats of every partition of a partitioned topic", func(ctx context.Context, p string) ([]byte, error) {
			return ac.get(ctx, p+"/partitioned-internalStats")
		}),
		tVerb("last-message-id", "Get the id of the last message", func(ctx context.Context, p string) ([]byte, error) {
			return ac.get(ctx, p+"/lastMessageId")
		}),
		tVerb("terminate", "Terminate a topic (no more writes)", func(ctx context.Context, p string) ([]byte, error) {
			return ac.send(ctx, http.MethodPost, p+"/terminate", nil)
		}),
		tVerb("partitioned-terminate", "Terminate every partition of a partitioned topic", func(ctx context.Context, p string) ([]byte, error) {
			return ac.send(ctx, http.MethodPost, p+"/terminate/partitions", nil)
		}),
		tVerb("unload", "Unload a topic (clients reconnect)", func(ctx context.Context, p string) ([]byte, error) {
			return ac.send(ctx, http.MethodPut, p+"/unload", nil)
		}),
		tVerb("lookup", "Look up the broker serving a topic", func(ctx context.Context, p string) ([]byte, error) {
			return ac.get(ctx, strings.Replace(p, "/admin/v2/", "/lookup/v2/topic/", 1))
		}),
		tVerb("subscriptions", "List the subscriptions of a topic", func(ctx context.Context, p string) ([]byte, error) {
			return ac.get(ctx, p+"/subscriptions")
		}),
		createSub, unsub, skip,
		subFlag(tVerb("skip-all", "Skip every message of a subscription (clear its backlog)", func(ctx context.Context, p string) ([]byte, error) {
			return ac.send(ctx, http.MethodPost, subPath(p)+"/skip_all", nil)
		})),
		subFlag(tVerb("clear-backlog", "Same as skip-all", func(ctx context.Context, p string) ([]byte, error) {
			return ac.send(ctx, http.MethodPost, subPath(p)+"/skip_all", nil)
		})),
		expire, reset, peek, examine,
	)
	cmd.AddCommand(ac.offloadVerbs(tVerb)...)
	cmd.AddCommand(ac.compactionVerbs(tVerb)...)
	return cmd
}

// verbRaw is verb for commands that print themselves.
func (ac *adminCLI) verbRaw(use, short string, run func(ctx context.Context, cmd *cobra.Command, args []string) error) *cobra.Command {
	return &cobra.Command{Use: use, Short: short, Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error { return run(cmd.Context(), cmd, args) }}
}

// printPeeked prints up to limit messages of a peeked entry and returns how many: id, publish time and, for each message (a batch is
// split with its per-message properties), properties and payload as text when it is UTF-8,
// else as hex. A batch that does not parse (compressed) is shown whole.
func printPeeked(cmd *cobra.Command, output string, h http.Header, body []byte, limit int) int {
	out := cmd.OutOrStdout()
	id, published := h.Get("X-Pulsar-Message-Id"), h.Get("X-Pulsar-Publish-Time")
	var entryProps map[string]string
	_ = json.Unmarshal([]byte(h.Get("X-Pulsar-Property")), &entryProps)
	type msg struct {
		ID         string            `json:"messageId"`
		Published  string            `json:"publishTime"`
		Properties map[string]string `json:"properties,omitempty"`
		Payload    string            `json:"payload"`
	}
	var msgs []msg
	if n, err := strconv.Atoi(h.Get("X-Pulsar-Num-Batch-Message")); err == nil && n > 0 {
		br := wire.NewBatchReader(body, n)
		var smm pb.SingleMessageMetadata
		for i := 0; ; i++ {
			p, err := br.Next(&smm)
			if err != nil {
				if !errors.Is(err, io.EOF) {
					msgs = nil // not a plain batch body: show it whole below
				}
				break
			}
			props := map[string]string{}
			for _, kv := range smm.GetProperties() {
				props[kv.GetKey()] = kv.GetValue()
			}
			msgs = append(msgs, msg{ID: id + ":" + strconv.Itoa(i), Published: published, Properties: props, Payload: printable(p)})
		}
	}
	if msgs == nil {
		msgs = []msg{{ID: id, Published: published, Properties: entryProps, Payload: printable(body)}}
	}
	if len(msgs) > limit {
		msgs = msgs[:limit]
	}
	for _, m := range msgs {
		if output == "json" {
			b, _ := json.Marshal(m)
			fmt.Fprintln(out, string(b))
			continue
		}
		fmt.Fprintf(out, "Message ID: %s\nPublish time: %s\n", m.ID, m.Published)
		for k, v := range m.Properties {
			fmt.Fprintf(out, "Property %s: %s\n", k, v)
		}
		fmt.Fprintf(out, "%s\n\n", m.Payload)
	}
	return len(msgs)
}

func printable(b []byte) string {
	if utf8.Valid(b) {
		return string(b)
	}
	return fmt.Sprintf("%x", b)
}

// bundlePath is the "/{bundle}" path segment of a -b flag ("" without one).
func bundlePath(bundle string) string {
	if bundle == "" {
		return ""
	}
	return "/" + url.PathEscape(bundle)
}
