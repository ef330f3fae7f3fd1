package admin

import (
	"context"
	"fmt"
	"net/http"
	"slices"

	"github.com/magnetar-io/magnetar/internal/auth"
	"github.com/magnetar-io/magnetar/internal/offload"
	"github.com/magnetar-io/magnetar/internal/resources"
	"github.com/magnetar-io/magnetar/internal/schema"
)

// The rest of Pulsar's namespace and topic policy endpoints, built from one generic field
// description each: the value is a pointer field of the policies record, nil when unset
// (GET answers null, which pulsaradmin decodes as "not set"), validated after decoding.
// Which of them the broker applies, and how, is in internal/topics/policies.go.

// reasonError is a 400 whose text is exactly Pulsar's (clients compare the reason).
type reasonError string

func (e reasonError) Error() string        { return string(e) }
func (e reasonError) Is(target error) bool { return target == ErrBadRequest }

// decodeChecked decodes a JSON body into a new T and validates it.
func decodeChecked[T any](r *http.Request, check func(*T) error) (*T, error) {
	v := new(T)
	if err := decodeBody(r, v); err != nil {
		return nil, err
	}
	if check != nil {
		if err := check(v); err != nil {
			return nil, err
		}
	}
	return v, nil
}

// topicField is a topic policy over the pointer field f; ns is the namespace value that
// ?applied=true falls back to (nil: none).
func topicField[T any](name string, f func(*resources.TopicPolicies) **T, ns func(*resources.Policies) any, check func(*T) error) topicPolicy {
	if ns == nil {
		ns = func(*resources.Policies) any { return nil }
	}
	return topicPolicy{
		name:    name,
		get:     func(tp *resources.TopicPolicies) any { return *f(tp) },
		applied: ns,
		set: func(tp *resources.TopicPolicies, r *http.Request) error {
			v, err := decodeChecked(r, check)
			if err == nil {
				*f(tp) = v
			}
			return err
		},
		remove: func(tp *resources.TopicPolicies) { *f(tp) = nil },
	}
}

// nsField is a namespace policy over the pointer field f; unset answers unsetValue (nil:
// null, which clients decode as their own default).
func nsField[T any](name string, f func(*resources.Policies) **T, unsetValue any, check func(*T) error) policy {
	return policy{
		name: name,
		get: func(p *resources.Policies) any {
			if v := *f(p); v != nil {
				return v
			}
			return unsetValue
		},
		set: func(p *resources.Policies, r *http.Request) error {
			v, err := decodeChecked(r, check)
			if err == nil {
				*f(p) = v
			}
			return err
		},
		remove: func(p *resources.Policies) { *f(p) = nil },
	}
}

// atLeast refuses values under min with reason (Pulsar's text where a client checks it).
func atLeast[T int | int64](min T, reason string) func(*T) error {
	return func(v *T) error {
		if *v < min {
			if reason == "" {
				return fmt.Errorf("%w: the value must be %d or more, got %d", ErrBadRequest, min, *v)
			}
			return reasonError(reason)
		}
		return nil
	}
}

func checkPersistence(p *resources.PersistencePolicies) error {
	e, w, a := p.BookkeeperEnsemble, p.BookkeeperWriteQuorum, p.BookkeeperAckQuorum
	if !(e >= w && w >= a && a >= 1) {
		return fmt.Errorf("%w: need bookkeeperEnsemble >= bookkeeperWriteQuorum >= bookkeeperAckQuorum >= 1, got %d/%d/%d", ErrBadRequest, e, w, a)
	}
	if p.ManagedLedgerMaxMarkDeleteRate < 0 {
		return fmt.Errorf("%w: managedLedgerMaxMarkDeleteRate must be >= 0", ErrBadRequest)
	}
	return nil
}

func checkOffloadPolicies(p *resources.OffloadPolicies) error {
	if err := (*offload.Policies)(p).Validate(); err != nil {
		return fmt.Errorf("%w: %w", ErrBadRequest, err)
	}
	return nil
}

func checkDispatchRate(d *resources.DispatchRate) error {
	if d.RatePeriodInSecond < 0 {
		return fmt.Errorf("%w: ratePeriodInSecond must be >= 0", ErrBadRequest)
	}
	return nil
}

var moreTopicPolicies = []topicPolicy{
	topicField("persistence", func(tp *resources.TopicPolicies) **resources.PersistencePolicies { return &tp.Persistence },
		func(ns *resources.Policies) any { return ns.Persistence }, checkPersistence),
	topicField("maxUnackedMessagesOnConsumer", func(tp *resources.TopicPolicies) **int { return &tp.MaxUnackedMessagesOnConsumer },
		func(ns *resources.Policies) any { return ns.MaxUnackedPerConsumer }, atLeast(0, "")),
	topicField("maxUnackedMessagesOnSubscription", func(tp *resources.TopicPolicies) **int { return &tp.MaxUnackedMessagesOnSubscription },
		func(ns *resources.Policies) any { return ns.MaxUnackedPerSubscription }, atLeast(0, "")),
	topicField("maxConsumersPerSubscription", func(tp *resources.TopicPolicies) **int { return &tp.MaxConsumersPerSubscription },
		func(ns *resources.Policies) any { return ns.MaxConsumersPerSub }, atLeast(0, "")),
	topicField("maxSubscriptionsPerTopic", func(tp *resources.TopicPolicies) **int { return &tp.MaxSubscriptionsPerTopic },
		func(ns *resources.Policies) any { return ns.MaxSubscriptionsPerTopic }, atLeast(0, "")),
	topicField("maxMessageSize", func(tp *resources.TopicPolicies) **int { return &tp.MaxMessageSize }, nil, atLeast(0, "")),
	topicField("deduplicationSnapshotInterval", func(tp *resources.TopicPolicies) **int { return &tp.DeduplicationSnapshotIntervalSeconds }, nil, atLeast(0, "")),
	topicField("schemaValidationEnforced", func(tp *resources.TopicPolicies) **bool { return &tp.SchemaValidationEnforced },
		func(ns *resources.Policies) any { return ns.SchemaValidationEnforced }, nil),
	topicField("delayedDelivery", func(tp *resources.TopicPolicies) **resources.DelayedDeliveryPolicies { return &tp.DelayedDelivery }, nil,
		func(d *resources.DelayedDeliveryPolicies) error {
			if d.TickTime < 0 || d.MaxDelayInMillis < 0 {
				return fmt.Errorf("%w: tickTime and maxDelayInMillis must be >= 0", ErrBadRequest)
			}
			return nil
		}),
	topicField("dispatchRate", func(tp *resources.TopicPolicies) **resources.DispatchRate { return &tp.DispatchRate }, nil, checkDispatchRate),
	topicField("subscriptionDispatchRate", func(tp *resources.TopicPolicies) **resources.DispatchRate { return &tp.SubscriptionDispatchRate }, nil, checkDispatchRate),
	topicField("replicatorDispatchRate", func(tp *resources.TopicPolicies) **resources.DispatchRate { return &tp.ReplicatorDispatchRate }, nil, checkDispatchRate),
	topicField("publishRate", func(tp *resources.TopicPolicies) **resources.PublishRate { return &tp.PublishRate }, nil, nil),
	topicField("subscribeRate", func(tp *resources.TopicPolicies) **resources.SubscribeRate { return &tp.SubscribeRate }, nil, nil),
	topicField("offloadPolicies", func(tp *resources.TopicPolicies) **resources.OffloadPolicies { return &tp.OffloadPolicies },
		func(ns *resources.Policies) any { return ns.OffloadPolicies }, checkOffloadPolicies),
	topicField("autoSubscriptionCreation", func(tp *resources.TopicPolicies) **resources.AutoSubscriptionCreationOverride {
		return &tp.AutoSubscriptionCreation
	}, nil, nil),
	topicField("compactionThreshold", func(tp *resources.TopicPolicies) **int64 { return &tp.CompactionThreshold },
		func(ns *resources.Policies) any { return ns.CompactionThreshold }, atLeast[int64](0, "")),
	topicField("inactiveTopicPolicies", func(tp *resources.TopicPolicies) **resources.InactiveTopicPolicies { return &tp.InactiveTopicPolicies }, nil, nil),
	{
		name:    "schemaCompatibilityStrategy",
		get:     func(tp *resources.TopicPolicies) any { return tp.SchemaCompatibilityStrategy },
		applied: func(ns *resources.Policies) any { return nonEmpty(ns.SchemaCompatibility) },
		set: func(tp *resources.TopicPolicies, r *http.Request) error {
			text, err := stringBody(r)
			if err != nil {
				return err
			}
			st, err := schema.ParseStrategy(text)
			if err != nil {
				return err
			}
			v := string(st)
			tp.SchemaCompatibilityStrategy = &v
			return nil
		},
		remove: func(tp *resources.TopicPolicies) { tp.SchemaCompatibilityStrategy = nil },
	},
	{
		name:    "replication",
		get:     func(tp *resources.TopicPolicies) any { return nilIfEmpty(tp.ReplicationClusters) },
		applied: func(ns *resources.Policies) any { return nilIfEmpty(ns.ReplicationClusters) },
		set: func(tp *resources.TopicPolicies, r *http.Request) error {
			var cs []string
			if err := decodeBody(r, &cs); err != nil {
				return err
			}
			if slices.Contains(cs, "") {
				return fmt.Errorf("%w: empty cluster name", ErrBadRequest)
			}
			tp.ReplicationClusters = cs
			return nil
		},
		remove: func(tp *resources.TopicPolicies) { tp.ReplicationClusters = nil },
	},
}

func nonEmpty(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func nilIfEmpty(s []string) any {
	if len(s) == 0 {
		return nil
	}
	return s
}

var minusOne = int64(-1)

var moreNamespacePolicies = []policy{
	nsField("subscriptionExpirationTime", func(p *resources.Policies) **int { return &p.SubscriptionExpiration }, nil,
		atLeast(0, "Invalid value for subscription expiration time")),
	nsField("maxTopicsPerNamespace", func(p *resources.Policies) **int { return &p.MaxTopicsPerNamespace }, 0,
		atLeast(0, "maxTopicsPerNamespace must be 0 or more")),
	nsField("maxConsumersPerSubscription", func(p *resources.Policies) **int { return &p.MaxConsumersPerSub }, nil, atLeast(0, "")),
	nsField("maxSubscriptionsPerTopic", func(p *resources.Policies) **int { return &p.MaxSubscriptionsPerTopic }, nil, atLeast(0, "")),
	nsField("maxUnackedMessagesPerConsumer", func(p *resources.Policies) **int { return &p.MaxUnackedPerConsumer }, nil, atLeast(0, "")),
	nsField("maxUnackedMessagesPerSubscription", func(p *resources.Policies) **int { return &p.MaxUnackedPerSubscription }, nil, atLeast(0, "")),
	nsField("compactionThreshold", func(p *resources.Policies) **int64 { return &p.CompactionThreshold }, nil, atLeast[int64](0, "")),
	nsField("offloadThreshold", func(p *resources.Policies) **int64 { return &p.OffloadThreshold }, minusOne, atLeast[int64](-1, "")),
	nsField("offloadThresholdInSeconds", func(p *resources.Policies) **int64 { return &p.OffloadThresholdInSeconds }, minusOne,
		atLeast[int64](-1, "Invalid value for offloadThresholdInSecond")),
	nsField("offloadDeletionLagMs", func(p *resources.Policies) **int64 { return &p.OffloadDeletionLagMs }, nil, atLeast[int64](-1, "")),
	nsField("offloadPolicies", func(p *resources.Policies) **resources.OffloadPolicies { return &p.OffloadPolicies }, nil, checkOffloadPolicies),
	{
		// Pulsar's subscriptionAuthMode: a JSON string, None when unset.
		name: "subscriptionAuthMode",
		get: func(p *resources.Policies) any {
			if p.SubscriptionAuthMode == "" {
				return auth.SubscriptionAuthNone
			}
			return p.SubscriptionAuthMode
		},
		set: func(p *resources.Policies, r *http.Request) error {
			text, err := stringBody(r)
			if err != nil {
				return err
			}
			m, err := auth.ParseSubscriptionAuthMode(text)
			if err != nil {
				return fmt.Errorf("%w: %w", ErrBadRequest, err)
			}
			p.SubscriptionAuthMode = m
			return nil
		},
		remove: func(p *resources.Policies) { p.SubscriptionAuthMode = "" },
	},
	nsField("persistence/bookieAffinity", func(p *resources.Policies) **resources.BookieAffinityGroup { return &p.BookieAffinityGroup }, nil,
		func(g *resources.BookieAffinityGroup) error {
			if g.Primary == "" {
				return fmt.Errorf("%w: bookkeeperAffinityGroupPrimary is required", ErrBadRequest)
			}
			return nil
		}),
}

// registerClusterRates registers the namespace rate policies, which Pulsar's Policies keeps
// per cluster: GET/POST/DELETE act on this broker's cluster's entry.
func (s *server) registerClusterRates(mux *http.ServeMux) {
	const base = "/admin/v2/namespaces/{tenant}/{namespace}/"
	for _, pol := range []policy{
		clusterField(s.cluster, "publishRate", func(p *resources.Policies) *map[string]resources.PublishRate { return &p.PublishMaxMessageRate }, nil),
		clusterField(s.cluster, "dispatchRate", func(p *resources.Policies) *map[string]resources.DispatchRate { return &p.TopicDispatchRate }, checkDispatchRate),
		clusterField(s.cluster, "subscriptionDispatchRate", func(p *resources.Policies) *map[string]resources.DispatchRate { return &p.SubscriptionDispatchRate }, checkDispatchRate),
		clusterField(s.cluster, "replicatorDispatchRate", func(p *resources.Policies) *map[string]resources.DispatchRate { return &p.ReplicatorDispatchRate }, checkDispatchRate),
		clusterField(s.cluster, "subscribeRate", func(p *resources.Policies) *map[string]resources.SubscribeRate { return &p.ClusterSubscribeRate }, nil),
	} {
		mux.HandleFunc("GET "+base+pol.name, s.handle(func(ctx context.Context, r *http.Request) (any, error) {
			p, err := s.namespacePolicies(ctx, r)
			if err != nil {
				return nil, err
			}
			return pol.get(&p), nil
		}))
		mux.HandleFunc("POST "+base+pol.name, s.handle(func(ctx context.Context, r *http.Request) (any, error) {
			return nil, s.updatePolicies(ctx, r, func(p *resources.Policies) error { return pol.set(p, r) })
		}))
		mux.HandleFunc("DELETE "+base+pol.name, s.handle(func(ctx context.Context, r *http.Request) (any, error) {
			return nil, s.updatePolicies(ctx, r, func(p *resources.Policies) error { pol.remove(p); return nil })
		}))
	}
}

// clusterField is a namespace policy stored per cluster, read and written for cluster.
func clusterField[T any](cluster, name string, f func(*resources.Policies) *map[string]T, check func(*T) error) policy {
	return policy{
		name: name,
		get: func(p *resources.Policies) any {
			if v, ok := (*f(p))[cluster]; ok {
				return v
			}
			return nil
		},
		set: func(p *resources.Policies, r *http.Request) error {
			v, err := decodeChecked(r, check)
			if err != nil {
				return err
			}
			if *f(p) == nil {
				*f(p) = map[string]T{}
			}
			(*f(p))[cluster] = *v
			return nil
		},
		remove: func(p *resources.Policies) { delete(*f(p), cluster) },
	}
}
