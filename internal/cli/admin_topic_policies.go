package cli

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
)

// addTopicPolicyVerbs adds pulsar-admin's topic-level policy verbs (message TTL, retention,
// deduplication, backlog quota, max producers and consumers) to the topics group, and the
// same verbs as their own group, topic-policies (alias topicPolicies), as newer pulsar-admin
// has them. The topics group also gets the topic permission verbs and the verbs of
// admin_topic_extras.go.
func (ac *adminCLI) addTopicPolicyVerbs(admin *cobra.Command) {
	for _, c := range admin.Commands() {
		if c.Name() == "topics" {
			c.AddCommand(ac.topicPolicyVerbs()...)
			c.AddCommand(ac.moreTopicPolicyVerbs()...)
			c.AddCommand(ac.topicPermissionVerbs()...)
			c.AddCommand(ac.topicExtraVerbs()...) // admin_topic_extras.go
		}
	}
	group := &cobra.Command{Use: "topic-policies", Aliases: []string{"topicPolicies"}, Short: "Operations about topic-level policies"}
	group.AddCommand(ac.topicPolicyVerbs()...)
	group.AddCommand(ac.moreTopicPolicyVerbs()...)
	admin.AddCommand(group)
}

// topicVerb is a verb on one topic: run gets /admin/v2/<domain>/<tenant>/<ns>/<topic>.
func (ac *adminCLI) topicVerb(use, short string, run func(ctx context.Context, p string) ([]byte, error)) *cobra.Command {
	return ac.verb(use+" <topic>", short, 1, func(ctx context.Context, args []string) ([]byte, error) {
		tp, err := topicPath(args[0])
		if err != nil {
			return nil, err
		}
		return run(ctx, "/admin/v2/"+tp)
	})
}

// topicPolicyVerbs builds a fresh set of verbs (each call has its own flag variables, so
// the two groups do not share state). Flag names are pulsar-admin's.
func (ac *adminCLI) topicPolicyVerbs() []*cobra.Command {
	var out []*cobra.Command
	// getRemove adds get-<name> (with --applied) and remove-<name> for the REST policy rest.
	getRemove := func(name, what, rest string, set *cobra.Command) {
		var applied bool
		get := ac.topicVerb("get-"+name, "Get the topic's "+what, func(ctx context.Context, p string) ([]byte, error) {
			return ac.get(ctx, p+"/"+rest+"?applied="+strconv.FormatBool(applied))
		})
		get.Flags().BoolVar(&applied, "applied", false, "show the value in effect (the namespace's when the topic has none)")
		remove := ac.topicVerb("remove-"+name, "Remove the topic's "+what+" (the namespace's applies)", func(ctx context.Context, p string) ([]byte, error) {
			return ac.send(ctx, http.MethodDelete, p+"/"+rest, nil)
		})
		out = append(out, get, set, remove)
	}

	var ttl int
	setTTL := ac.topicVerb("set-message-ttl", "Set the topic's message TTL", func(ctx context.Context, p string) ([]byte, error) {
		if ttl < 0 {
			return nil, usageError(fmt.Errorf("--ttl must be >= 0"))
		}
		return ac.send(ctx, http.MethodPost, p+"/messageTTL?messageTTL="+strconv.Itoa(ttl), nil)
	})
	setTTL.Flags().IntVarP(&ttl, "ttl", "t", 0, "message TTL in seconds (0: messages do not expire)")
	_ = setTTL.MarkFlagRequired("ttl")
	getRemove("message-ttl", "message TTL", "messageTTL", setTTL)

	var retSize, retTime string
	setRetention := ac.topicVerb("set-retention", "Set the topic's retention policy", func(ctx context.Context, p string) ([]byte, error) {
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
	getRemove("retention", "retention policy", "retention", setRetention)

	var enable, disable bool
	setDedup := ac.topicVerb("set-deduplication", "Enable or disable deduplication on the topic", func(ctx context.Context, p string) ([]byte, error) {
		if enable == disable {
			return nil, usageError(fmt.Errorf("give exactly one of --enable and --disable"))
		}
		return ac.send(ctx, http.MethodPost, p+"/deduplicationEnabled", enable)
	})
	setDedup.Flags().BoolVarP(&enable, "enable", "e", false, "enable deduplication")
	setDedup.Flags().BoolVarP(&disable, "disable", "d", false, "disable deduplication")
	getRemove("deduplication", "deduplication setting", "deduplicationEnabled", setDedup)

	var maxProducers, maxConsumers int
	setMaxP := ac.topicVerb("set-max-producers", "Set the topic's producer limit", func(ctx context.Context, p string) ([]byte, error) {
		return ac.send(ctx, http.MethodPost, p+"/maxProducers", maxProducers)
	})
	setMaxP.Flags().IntVarP(&maxProducers, "max-producers", "p", 0, "producers allowed at once (0: unlimited)")
	_ = setMaxP.MarkFlagRequired("max-producers")
	getRemove("max-producers", "producer limit", "maxProducers", setMaxP)
	setMaxC := ac.topicVerb("set-max-consumers", "Set the topic's consumer limit", func(ctx context.Context, p string) ([]byte, error) {
		return ac.send(ctx, http.MethodPost, p+"/maxConsumers", maxConsumers)
	})
	setMaxC.Flags().IntVarP(&maxConsumers, "max-consumers", "c", 0, "consumers allowed at once (0: unlimited)")
	_ = setMaxC.MarkFlagRequired("max-consumers")
	getRemove("max-consumers", "consumer limit", "maxConsumers", setMaxC)

	var quotaLimit, quotaPolicy, quotaType, removeType string
	var quotaTime int64
	var applied bool
	getQuotas := ac.topicVerb("get-backlog-quotas", "Get the topic's backlog quotas", func(ctx context.Context, p string) ([]byte, error) {
		return ac.get(ctx, p+"/backlogQuotaMap?applied="+strconv.FormatBool(applied))
	})
	getQuotas.Flags().BoolVar(&applied, "applied", false, "show the quotas in effect (the namespace's when the topic has none)")
	setQuota := ac.topicVerb("set-backlog-quota", "Set a backlog quota on the topic", func(ctx context.Context, p string) ([]byte, error) {
		body, err := backlogQuotaArgs(quotaLimit, quotaTime, quotaPolicy)
		if err != nil {
			return nil, err
		}
		return ac.send(ctx, http.MethodPost, p+"/backlogQuota?backlogQuotaType="+url.QueryEscape(quotaType), body)
	})
	backlogQuotaFlags(setQuota, &quotaLimit, &quotaTime, &quotaPolicy, &quotaType)
	removeQuota := ac.topicVerb("remove-backlog-quota", "Remove a backlog quota from the topic", func(ctx context.Context, p string) ([]byte, error) {
		return ac.send(ctx, http.MethodDelete, p+"/backlogQuota?backlogQuotaType="+url.QueryEscape(removeType), nil)
	})
	removeQuota.Flags().StringVarP(&removeType, "type", "t", "destination_storage", "destination_storage or message_age")
	return append(out, getQuotas, setQuota, removeQuota)
}

// backlogQuotaFlags declares pulsar-admin's set-backlog-quota flags (-lt has no
// one-letter form here: --limitTime).
func backlogQuotaFlags(c *cobra.Command, limit *string, limitTime *int64, policy, typ *string) {
	c.Flags().StringVarP(limit, "limit", "l", "", "size limit, like 10G (destination_storage)")
	c.Flags().Int64Var(limitTime, "limitTime", 0, "age limit in seconds (message_age)")
	c.Flags().StringVarP(policy, "policy", "p", "", "producer_request_hold, producer_exception or consumer_backlog_eviction")
	c.Flags().StringVarP(typ, "type", "t", "destination_storage", "destination_storage or message_age")
	_ = c.MarkFlagRequired("policy")
}

// backlogQuotaArgs is the BacklogQuota body of set-backlog-quota.
func backlogQuotaArgs(limit string, limitTime int64, policy string) (map[string]any, error) {
	body := map[string]any{"policy": policy}
	if limit != "" {
		n, err := parseSizeBytes(limit)
		if err != nil {
			return nil, usageError(fmt.Errorf("--limit: %w", err))
		}
		body["limitSize"] = n
	}
	if limitTime != 0 {
		body["limitTime"] = limitTime
	}
	return body, nil
}

// topicPermissionVerbs are pulsar-admin's topics permissions, grant-permission and
// revoke-permission.
func (ac *adminCLI) topicPermissionVerbs() []*cobra.Command {
	var role, actions, revokeRole string
	grant := ac.topicVerb("grant-permission", "Grant a role permissions on a topic", func(ctx context.Context, p string) ([]byte, error) {
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
	revoke := ac.topicVerb("revoke-permission", "Revoke a role's permissions on a topic", func(ctx context.Context, p string) ([]byte, error) {
		return ac.send(ctx, http.MethodDelete, p+"/permissions/"+url.PathEscape(revokeRole), nil)
	})
	revoke.Flags().StringVar(&revokeRole, "role", "", "the role")
	_ = revoke.MarkFlagRequired("role")
	return []*cobra.Command{
		ac.topicVerb("permissions", "Get the permissions on a topic (its own and its namespace's)", func(ctx context.Context, p string) ([]byte, error) {
			return ac.get(ctx, p+"/permissions")
		}),
		grant, revoke,
	}
}

// splitActions reads a comma-separated --actions list.
func splitActions(s string) []string {
	var list []string
	for _, a := range strings.Split(s, ",") {
		if a = strings.TrimSpace(a); a != "" {
			list = append(list, a)
		}
	}
	return list
}
