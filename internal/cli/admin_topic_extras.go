package cli

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
)

// topicExtraVerbs are pulsar-admin topics verbs over REST endpoints that had no verb:
// properties, get-message-by-id, get-message-id (by time),
// expire-messages-all-subscriptions and bundle-range.
func (ac *adminCLI) topicExtraVerbs() []*cobra.Command {
	var props []string
	update := ac.topicVerb("update-properties", "Add or replace properties of a topic", func(ctx context.Context, p string) ([]byte, error) {
		m := map[string]string{}
		for _, kv := range props {
			k, v, ok := strings.Cut(kv, "=")
			if !ok || k == "" {
				return nil, usageError(fmt.Errorf("--property: want key=value, got %q", kv))
			}
			m[k] = v
		}
		return ac.send(ctx, http.MethodPut, p+"/properties", m)
	})
	update.Flags().StringArrayVarP(&props, "property", "p", nil, "key=value (repeatable)")
	_ = update.MarkFlagRequired("property")
	var key string
	remove := ac.topicVerb("remove-properties", "Remove a property of a topic", func(ctx context.Context, p string) ([]byte, error) {
		return ac.send(ctx, http.MethodDelete, p+"/properties?key="+url.QueryEscape(key), nil)
	})
	remove.Flags().StringVarP(&key, "key", "k", "", "the property key")
	_ = remove.MarkFlagRequired("key")

	var ledger, entry int64
	byID := ac.verbRaw("get-message-by-id <topic>", "Show the message with a ledger and entry id", func(ctx context.Context, cmd *cobra.Command, args []string) error {
		tp, err := topicPath(args[0])
		if err != nil {
			return err
		}
		b, h, err := ac.call(ctx, http.MethodGet, "/admin/v2/"+tp+"/ledger/"+strconv.FormatInt(ledger, 10)+"/entry/"+strconv.FormatInt(entry, 10), nil)
		if err != nil {
			return err
		}
		printPeeked(cmd, ac.output, h, b, math.MaxInt)
		return nil
	})
	byID.Flags().Int64VarP(&ledger, "ledgerId", "l", 0, "ledger id")
	byID.Flags().Int64VarP(&entry, "entryId", "e", 0, "entry id")
	_ = byID.MarkFlagRequired("ledgerId")
	_ = byID.MarkFlagRequired("entryId")

	var datetime string
	idAt := ac.topicVerb("get-message-id", "Get the id of the first message published at or after a time", func(ctx context.Context, p string) ([]byte, error) {
		t, err := time.Parse(time.RFC3339Nano, datetime)
		if err != nil {
			return nil, usageError(fmt.Errorf("--datetime: want a time like 2021-06-28T16:53:08Z: %w", err))
		}
		return ac.get(ctx, p+"/messageid/"+strconv.FormatInt(t.UnixMilli(), 10))
	})
	idAt.Flags().StringVarP(&datetime, "datetime", "d", "", "time with zone offset (RFC 3339), like 2021-06-28T16:53:08Z")
	_ = idAt.MarkFlagRequired("datetime")

	var expireSecs int64
	expireAll := ac.topicVerb("expire-messages-all-subscriptions", "Expire the messages older than a time on every subscription", func(ctx context.Context, p string) ([]byte, error) {
		return ac.send(ctx, http.MethodPost, p+"/all_subscription/expireMessages/"+strconv.FormatInt(expireSecs, 10), nil)
	})
	expireAll.Flags().Int64VarP(&expireSecs, "expireTime", "t", 0, "expire messages older than this many seconds")
	_ = expireAll.MarkFlagRequired("expireTime")

	return []*cobra.Command{
		ac.topicVerb("get-properties", "Get the properties of a topic", func(ctx context.Context, p string) ([]byte, error) {
			return ac.get(ctx, p+"/properties")
		}),
		update, remove, byID, idAt, expireAll,
		ac.topicVerb("bundle-range", "Get the namespace bundle a topic belongs to", func(ctx context.Context, p string) ([]byte, error) {
			b, err := ac.get(ctx, strings.Replace(p, "/admin/v2/", "/lookup/v2/topic/", 1)+"/bundle")
			if err == nil {
				b = append(b, '\n') // plain text, not JSON
			}
			return b, err
		}),
	}
}
