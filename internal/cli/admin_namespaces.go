package cli

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
)

// nsVerbFunc builds a namespace subcommand (see namespacesCmd) from the namespace's REST
// base path.
type nsVerbFunc func(use, short string, run func(ctx context.Context, ns string) ([]byte, error)) *cobra.Command

// namespacePolicyVerbs are pulsar-admin's namespace policy verbs beyond retention, TTL and
// deduplication: backlog quotas, persistence, permissions and auto topic creation. Flags
// carry pulsar-admin's names.
func (ac *adminCLI) namespacePolicyVerbs(nsVerb nsVerbFunc) []*cobra.Command {
	var (
		quotaLimit, quotaPolicy, quotaType string
		quotaTime                          int64
	)
	setQuota := nsVerb("set-backlog-quota", "Set a backlog quota", func(ctx context.Context, p string) ([]byte, error) {
		body, err := backlogQuotaArgs(quotaLimit, quotaTime, quotaPolicy)
		if err != nil {
			return nil, err
		}
		return ac.send(ctx, http.MethodPost, p+"/backlogQuota?backlogQuotaType="+url.QueryEscape(quotaType), body)
	})
	backlogQuotaFlags(setQuota, &quotaLimit, &quotaTime, &quotaPolicy, &quotaType)
	var removeType string
	removeQuota := nsVerb("remove-backlog-quota", "Remove a backlog quota", func(ctx context.Context, p string) ([]byte, error) {
		return ac.send(ctx, http.MethodDelete, p+"/backlogQuota?backlogQuotaType="+url.QueryEscape(removeType), nil)
	})
	removeQuota.Flags().StringVar(&removeType, "type", "destination_storage", "destination_storage or message_age")

	var ensemble, writeQuorum, ackQuorum int
	var markDeleteRate float64
	setPersistence := nsVerb("set-persistence", "Set the ledger ensemble, write and ack quorums", func(ctx context.Context, p string) ([]byte, error) {
		return ac.send(ctx, http.MethodPost, p+"/persistence", map[string]any{
			"bookkeeperEnsemble": ensemble, "bookkeeperWriteQuorum": writeQuorum,
			"bookkeeperAckQuorum": ackQuorum, "managedLedgerMaxMarkDeleteRate": markDeleteRate,
		})
	})
	setPersistence.Flags().IntVarP(&ensemble, "bookkeeper-ensemble", "e", 0, "bookies per ledger")
	setPersistence.Flags().IntVarP(&writeQuorum, "bookkeeper-write-quorum", "w", 0, "copies of each entry")
	setPersistence.Flags().IntVarP(&ackQuorum, "bookkeeper-ack-quorum", "a", 0, "acknowledgements awaited per entry")
	setPersistence.Flags().Float64VarP(&markDeleteRate, "ml-mark-delete-max-rate", "r", 0, "cursor persist rate limit per second (0: none)")
	for _, f := range []string{"bookkeeper-ensemble", "bookkeeper-write-quorum", "bookkeeper-ack-quorum"} {
		_ = setPersistence.MarkFlagRequired(f)
	}

	var role, actions string
	grant := nsVerb("grant-permission", "Grant a role permissions on a namespace", func(ctx context.Context, p string) ([]byte, error) {
		list := splitActions(actions)
		if len(list) == 0 {
			return nil, usageError(fmt.Errorf("--actions: give produce, consume or both"))
		}
		return ac.send(ctx, http.MethodPost, p+"/permissions/"+url.PathEscape(role), list)
	})
	grant.Flags().StringVar(&role, "role", "", "the role")
	grant.Flags().StringVar(&actions, "actions", "", "comma-separated actions: produce, consume")
	_ = grant.MarkFlagRequired("role")
	_ = grant.MarkFlagRequired("actions")
	var revokeRole string
	revoke := nsVerb("revoke-permission", "Revoke a role's permissions on a namespace", func(ctx context.Context, p string) ([]byte, error) {
		return ac.send(ctx, http.MethodDelete, p+"/permissions/"+url.PathEscape(revokeRole), nil)
	})
	revoke.Flags().StringVar(&revokeRole, "role", "", "the role")
	_ = revoke.MarkFlagRequired("role")

	var (
		autoEnable, autoDisable bool
		autoType                string
		autoPartitions          int
	)
	setAuto := nsVerb("set-auto-topic-creation", "Override the broker's auto topic creation for a namespace", func(ctx context.Context, p string) ([]byte, error) {
		if autoEnable == autoDisable {
			return nil, usageError(fmt.Errorf("give exactly one of --enable and --disable"))
		}
		body := map[string]any{"allowAutoTopicCreation": autoEnable, "topicType": autoType}
		if autoType == "partitioned" {
			body["defaultNumPartitions"] = autoPartitions
		}
		return ac.send(ctx, http.MethodPost, p+"/autoTopicCreation", body)
	})
	setAuto.Flags().BoolVarP(&autoEnable, "enable", "e", false, "allow auto topic creation")
	setAuto.Flags().BoolVarP(&autoDisable, "disable", "d", false, "forbid auto topic creation")
	setAuto.Flags().StringVarP(&autoType, "type", "t", "non-partitioned", "partitioned or non-partitioned")
	setAuto.Flags().IntVarP(&autoPartitions, "num-partitions", "n", 1, "partitions of auto-created partitioned topics")

	var maxProducers, maxConsumers int
	setMaxP := nsVerb("set-max-producers-per-topic", "Set the producer limit of each topic", func(ctx context.Context, p string) ([]byte, error) {
		return ac.send(ctx, http.MethodPost, p+"/maxProducersPerTopic", maxProducers)
	})
	setMaxP.Flags().IntVarP(&maxProducers, "max-producers-per-topic", "p", 0, "producers allowed at once per topic (0: unlimited)")
	_ = setMaxP.MarkFlagRequired("max-producers-per-topic")
	setMaxC := nsVerb("set-max-consumers-per-topic", "Set the consumer limit of each topic", func(ctx context.Context, p string) ([]byte, error) {
		return ac.send(ctx, http.MethodPost, p+"/maxConsumersPerTopic", maxConsumers)
	})
	setMaxC.Flags().IntVarP(&maxConsumers, "max-consumers-per-topic", "c", 0, "consumers allowed at once per topic (0: unlimited)")
	_ = setMaxC.MarkFlagRequired("max-consumers-per-topic")
	var props []string
	setProps := nsVerb("set-properties", "Add or replace properties of a namespace", func(ctx context.Context, p string) ([]byte, error) {
		m := map[string]string{}
		for _, kv := range props {
			k, v, ok := strings.Cut(kv, "=")
			if !ok || k == "" {
				return nil, usageError(fmt.Errorf("--properties: want key=value, got %q", kv))
			}
			m[k] = v
		}
		return ac.send(ctx, http.MethodPut, p+"/properties", m)
	})
	setProps.Flags().StringArrayVarP(&props, "properties", "p", nil, "key=value (repeatable)")
	_ = setProps.MarkFlagRequired("properties")

	var subName, subRole string
	var subRoles []string
	grantSub := nsVerb("grant-subscription-permission", "Allow roles to use a subscription name", func(ctx context.Context, p string) ([]byte, error) {
		return ac.send(ctx, http.MethodPost, p+"/permissions/subscription/"+url.PathEscape(subName), nonNil(subRoles))
	})
	grantSub.Flags().StringSliceVar(&subRoles, "roles", nil, "comma-separated roles")
	revokeSub := nsVerb("revoke-subscription-permission", "Remove a role from a subscription name", func(ctx context.Context, p string) ([]byte, error) {
		return ac.send(ctx, http.MethodDelete, p+"/permissions/"+url.PathEscape(subName)+"/"+url.PathEscape(subRole), nil)
	})
	revokeSub.Flags().StringVar(&subRole, "role", "", "the role")
	for _, c := range []*cobra.Command{grantSub, revokeSub} {
		c.Flags().StringVar(&subName, "subscription", "", "the subscription name")
		_ = c.MarkFlagRequired("subscription")
	}
	_ = grantSub.MarkFlagRequired("roles")
	_ = revokeSub.MarkFlagRequired("role")

	get := func(use, short, sub string) *cobra.Command {
		return nsVerb(use, short, func(ctx context.Context, p string) ([]byte, error) { return ac.get(ctx, p+"/"+sub) })
	}
	del := func(use, short, sub string) *cobra.Command {
		return nsVerb(use, short, func(ctx context.Context, p string) ([]byte, error) {
			return ac.send(ctx, http.MethodDelete, p+"/"+sub, nil)
		})
	}
	return []*cobra.Command{
		get("get-backlog-quotas", "Get the backlog quotas", "backlogQuotaMap"),
		setQuota, removeQuota,
		get("get-persistence", "Get the persistence policy", "persistence"),
		setPersistence,
		del("remove-persistence", "Remove the persistence policy (broker defaults apply)", "persistence"),
		get("permissions", "Get the permissions of a namespace", "permissions"),
		grant, revoke,
		get("subscription-permission", "Get the roles allowed on each subscription name", "permissions/subscription"),
		grantSub, revokeSub,
		get("get-auto-topic-creation", "Get the auto topic creation override", "autoTopicCreation"),
		setAuto,
		del("remove-auto-topic-creation", "Remove the auto topic creation override", "autoTopicCreation"),
		del("remove-retention", "Remove the retention policy", "retention"),
		del("remove-message-ttl", "Remove the message TTL", "messageTTL"),
		del("remove-deduplication", "Remove the deduplication setting", "deduplication"),
		get("get-max-producers-per-topic", "Get the producer limit of each topic", "maxProducersPerTopic"),
		setMaxP,
		del("remove-max-producers-per-topic", "Remove the producer limit (the broker's applies)", "maxProducersPerTopic"),
		get("get-max-consumers-per-topic", "Get the consumer limit of each topic", "maxConsumersPerTopic"),
		setMaxC,
		del("remove-max-consumers-per-topic", "Remove the consumer limit (the broker's applies)", "maxConsumersPerTopic"),
		get("get-properties", "Get the properties of a namespace", "properties"),
		setProps,
		del("clear-properties", "Remove every property of a namespace", "properties"),
	}
}

// parseSizeBytes reads a pulsar-admin size: a number of bytes with an optional K, M, G or T
// suffix (binary multiples).
func parseSizeBytes(s string) (int64, error) {
	mult := map[byte]int64{'k': 1 << 10, 'm': 1 << 20, 'g': 1 << 30, 't': 1 << 40}
	n := strings.ToLower(s)
	m := int64(1)
	if len(n) > 0 {
		if v, ok := mult[n[len(n)-1]]; ok {
			m, n = v, n[:len(n)-1]
		}
	}
	v, err := strconv.ParseInt(n, 10, 64)
	if err != nil || v < 0 || v > math.MaxInt64/m {
		return 0, fmt.Errorf("invalid size %q", s)
	}
	return v * m, nil
}
