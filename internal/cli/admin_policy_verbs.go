package cli

import (
	"context"
	"fmt"
	"net/http"
	"strconv"

	"github.com/spf13/cobra"

	"github.com/magnetar-io/magnetar/internal/auth"
)

// pulsar-admin's remaining namespace and topic policy verbs: a scalar policy is a
// get-/set-/remove- triple over one REST path with one value flag, built from a table;
// offload policies take pulsar-admin's set-offload-policies flags.

// scalarPolicy is one such triple.
type scalarPolicy struct {
	name   string // verb suffix: set-<name>, get-<name>, remove-<name>
	rest   string // REST path under the namespace or topic
	what   string // for help texts
	flag   string // the value flag (pulsar-admin's long name)
	short  string // its shorthand, "" for none
	method string // of set: POST or PUT, as pulsar-admin sends it
	parse  func(string) (any, error)
	remove string // the remove verb's prefix ("remove", or "clear" where pulsar-admin says so; "" none)
}

func parseIntValue(s string) (any, error) {
	v, err := strconv.Atoi(s)
	if err != nil {
		return nil, fmt.Errorf("invalid number %q", s)
	}
	return v, nil
}

func parseSizeValue(s string) (any, error) {
	if s == "-1" {
		return int64(-1), nil
	}
	return parseSizeBytes(s)
}

// parseMillisValue reads a pulsar-admin duration (10s, 5m, 1h, 2d; -1 disables) as
// milliseconds.
func parseMillisValue(s string) (any, error) {
	if s == "-1" || s == "0" {
		v, _ := strconv.ParseInt(s, 10, 64)
		return v, nil
	}
	d, err := parseRelTime(s)
	if err != nil {
		return nil, err
	}
	return d.Milliseconds(), nil
}

func parseSecondsValue(s string) (any, error) {
	if s == "-1" || s == "0" {
		v, _ := strconv.ParseInt(s, 10, 64)
		return v, nil
	}
	d, err := parseRelTime(s)
	if err != nil {
		return nil, err
	}
	return int64(d.Seconds()), nil
}

var namespaceScalarPolicies = []scalarPolicy{
	{"offload-threshold", "offloadThreshold", "bytes kept on the bookies before offloading (-1: never)", "size", "s", http.MethodPut, parseSizeValue, "remove"},
	{"offload-threshold-in-seconds", "offloadThresholdInSeconds", "age after which closed ledgers are offloaded (-1: never)", "time", "t", http.MethodPut, parseSecondsValue, "remove"},
	{"offload-deletion-lag", "offloadDeletionLagMs", "delay before the bookie copy of an offloaded ledger is deleted", "lag", "l", http.MethodPut, parseMillisValue, "clear"},
	{"max-subscriptions-per-topic", "maxSubscriptionsPerTopic", "subscription limit of each topic (0: unlimited)", "max-subscriptions-per-topic", "m", http.MethodPost, parseIntValue, "remove"},
	{"max-consumers-per-subscription", "maxConsumersPerSubscription", "consumer limit of each subscription (0: unlimited)", "max-consumers-per-subscription", "c", http.MethodPost, parseIntValue, "remove"},
	{"max-unacked-messages-per-consumer", "maxUnackedMessagesPerConsumer", "unacknowledged-message limit of each consumer (0: unlimited)", "max-unacked-messages-per-consumer", "c", http.MethodPost, parseIntValue, "remove"},
	{"max-unacked-messages-per-subscription", "maxUnackedMessagesPerSubscription", "unacknowledged-message limit of each subscription (0: unlimited)", "max-unacked-messages-per-subscription", "c", http.MethodPost, parseIntValue, "remove"},
	{"max-topics-per-namespace", "maxTopicsPerNamespace", "topic limit, partitions counted (0: unlimited)", "max-topics-per-namespace", "t", http.MethodPost, parseIntValue, "remove"},
	{"subscription-expiration-time", "subscriptionExpirationTime", "minutes after which an inactive subscription expires", "time", "t", http.MethodPost, parseIntValue, "remove"},
	{"compaction-threshold", "compactionThreshold", "backlog size that triggers compaction", "threshold", "t", http.MethodPut, parseSizeValue, "remove"},
	// pulsar-admin has no remove verb for it (set None instead).
	{"subscription-auth-mode", "subscriptionAuthMode", "subscription authorization mode (None, Prefix)", "subscription-auth-mode", "m", http.MethodPost, parseSubscriptionAuthMode, ""},
}

func parseSubscriptionAuthMode(s string) (any, error) { return auth.ParseSubscriptionAuthMode(s) }

var topicScalarPolicies = []scalarPolicy{
	{"max-subscriptions-per-topic", "maxSubscriptionsPerTopic", "subscription limit (0: unlimited)", "max-subscriptions-per-topic", "s", http.MethodPost, parseIntValue, "remove"},
	{"max-consumers-per-subscription", "maxConsumersPerSubscription", "consumer limit of each subscription (0: unlimited)", "max-consumers-per-subscription", "c", http.MethodPost, parseIntValue, "remove"},
	{"max-unacked-messages-per-consumer", "maxUnackedMessagesOnConsumer", "unacknowledged-message limit of each consumer (0: unlimited)", "maxNum", "m", http.MethodPost, parseIntValue, "remove"},
	{"max-unacked-messages-per-subscription", "maxUnackedMessagesOnSubscription", "unacknowledged-message limit of each subscription (0: unlimited)", "maxNum", "m", http.MethodPost, parseIntValue, "remove"},
	{"max-message-size", "maxMessageSize", "largest message in bytes", "max-message-size", "m", http.MethodPost, parseIntValue, "remove"},
	{"compaction-threshold", "compactionThreshold", "backlog size that triggers compaction", "threshold", "t", http.MethodPost, parseSizeValue, "remove"},
}

// scalarVerbs builds the get/set/remove triples of ps on a verb constructor (nsVerb or
// topicVerb).
func (ac *adminCLI) scalarVerbs(ps []scalarPolicy, verb func(use, short string, run func(ctx context.Context, p string) ([]byte, error)) *cobra.Command) []*cobra.Command {
	var out []*cobra.Command
	for _, sp := range ps {
		var value string
		set := verb("set-"+sp.name, "Set the "+sp.what, func(ctx context.Context, p string) ([]byte, error) {
			v, err := sp.parse(value)
			if err != nil {
				return nil, usageError(fmt.Errorf("--%s: %w", sp.flag, err))
			}
			return ac.send(ctx, sp.method, p+"/"+sp.rest, v)
		})
		set.Flags().StringVarP(&value, sp.flag, sp.short, "", sp.what)
		_ = set.MarkFlagRequired(sp.flag)
		get := verb("get-"+sp.name, "Get the "+sp.what, func(ctx context.Context, p string) ([]byte, error) {
			return ac.get(ctx, p+"/"+sp.rest)
		})
		out = append(out, set, get)
		if sp.remove == "" {
			continue
		}
		remove := verb(sp.remove+"-"+sp.name, "Remove the "+sp.what+" (the next level's applies)", func(ctx context.Context, p string) ([]byte, error) {
			return ac.send(ctx, http.MethodDelete, p+"/"+sp.rest, nil)
		})
		out = append(out, remove)
	}
	return out
}

// offloadPolicyVerbs are set-/get-/remove-offload-policies with pulsar-admin's flags.
// removePath is where the policy is deleted (namespaces: removeOffloadPolicies).
func (ac *adminCLI) offloadPolicyVerbs(verb func(use, short string, run func(ctx context.Context, p string) ([]byte, error)) *cobra.Command, removePath string) []*cobra.Command {
	var driver, region, bucket, endpoint, readPriority, threshold, thresholdTime, lag string
	var maxBlock, readBuf int
	set := verb("set-offload-policies", "Set the offload policies", func(ctx context.Context, p string) ([]byte, error) {
		body := map[string]any{}
		for k, v := range map[string]string{"managedLedgerOffloadDriver": driver, "managedLedgerOffloadRegion": region,
			"managedLedgerOffloadBucket": bucket, "managedLedgerOffloadServiceEndpoint": endpoint,
			"managedLedgerOffloadedReadPriority": readPriority} {
			if v != "" {
				body[k] = v
			}
		}
		for _, f := range []struct {
			key, flag, v string
			parse        func(string) (any, error)
		}{
			{"managedLedgerOffloadThresholdInBytes", "offloadAfterThreshold", threshold, parseSizeValue},
			{"managedLedgerOffloadThresholdInSeconds", "offloadAfterThresholdInSeconds", thresholdTime, parseSecondsValue},
			{"managedLedgerOffloadDeletionLagInMillis", "offloadAfterElapsed", lag, parseMillisValue},
		} {
			if f.v == "" {
				continue
			}
			n, err := f.parse(f.v)
			if err != nil {
				return nil, usageError(fmt.Errorf("--%s: %w", f.flag, err))
			}
			body[f.key] = n
		}
		if maxBlock > 0 {
			body["managedLedgerOffloadMaxBlockSizeInBytes"] = maxBlock
		}
		if readBuf > 0 {
			body["managedLedgerOffloadReadBufferSizeInBytes"] = readBuf
		}
		return ac.send(ctx, http.MethodPost, p+"/offloadPolicies", body)
	})
	fl := set.Flags()
	fl.StringVarP(&driver, "driver", "d", "", "aws-s3, S3, google-cloud-storage, azureblob or filesystem")
	fl.StringVarP(&region, "region", "r", "", "region of the object store")
	fl.StringVarP(&bucket, "bucket", "b", "", "bucket")
	fl.StringVarP(&endpoint, "endpoint", "e", "", "endpoint of the object store")
	fl.IntVarP(&maxBlock, "maxBlockSizeInBytes", "m", 0, "block size of offloaded ledgers")
	fl.IntVar(&readBuf, "readBufferSizeInBytes", 0, "read buffer size")
	fl.StringVarP(&threshold, "offloadAfterThreshold", "t", "", "bytes kept on the bookies before offloading (e.g. 10M; -1: never)")
	fl.StringVar(&thresholdTime, "offloadAfterThresholdInSeconds", "", "age after which closed ledgers are offloaded (e.g. 1h; -1: never)")
	fl.StringVar(&lag, "offloadAfterElapsed", "", "delay before bookie copies are deleted (e.g. 4h; -1: never)")
	fl.StringVar(&readPriority, "offloadedReadPriority", "", "tiered-storage-first or bookkeeper-first")
	get := verb("get-offload-policies", "Get the offload policies", func(ctx context.Context, p string) ([]byte, error) {
		return ac.get(ctx, p+"/offloadPolicies")
	})
	remove := verb("remove-offload-policies", "Remove the offload policies", func(ctx context.Context, p string) ([]byte, error) {
		return ac.send(ctx, http.MethodDelete, p+"/"+removePath, nil)
	})
	return []*cobra.Command{set, get, remove}
}

// moreTopicPolicyVerbs are the topic verbs of this file (fresh flag variables per call).
func (ac *adminCLI) moreTopicPolicyVerbs() []*cobra.Command {
	return append(ac.scalarVerbs(topicScalarPolicies, ac.topicVerb), ac.offloadPolicyVerbs(ac.topicVerb, "offloadPolicies")...)
}
