package admin

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strconv"

	"github.com/magnetar-io/magnetar/internal/resources"
)

// Topic-level policies (pulsaradmin's topic policy methods): POST/GET/DELETE
// /admin/v2/persistent/{t}/{ns}/{topic}/<policy>. They are stored under
// resources.TopicPoliciesRoot and override the namespace's; brokers watch that prefix, so a
// change applies to the live topic. GET answers the topic's own value (null when unset), or
// with ?applied=true the value in effect (topic, else namespace).

// topicPolicy is one topic policy endpoint, like policy for namespaces.
type topicPolicy struct {
	name    string
	get     func(tp *resources.TopicPolicies) any
	applied func(ns *resources.Policies) any // namespace fallback for ?applied=true
	set     func(tp *resources.TopicPolicies, r *http.Request) error
	remove  func(tp *resources.TopicPolicies)
}

func decodeIntPolicy(dst **int, what string) func(*resources.TopicPolicies, *http.Request) error {
	return func(_ *resources.TopicPolicies, r *http.Request) error {
		var v int
		if err := decodeBody(r, &v); err != nil {
			return err
		}
		if v < 0 {
			return fmt.Errorf("%w: %s must be >= 0, got %d", ErrBadRequest, what, v)
		}
		*dst = &v
		return nil
	}
}

var topicPolicies = []topicPolicy{
	{
		name:    "messageTTL",
		get:     func(tp *resources.TopicPolicies) any { return tp.MessageTTLInSeconds },
		applied: func(ns *resources.Policies) any { return ns.MessageTTLInSeconds },
		set: func(tp *resources.TopicPolicies, r *http.Request) error {
			// pulsaradmin sends ?messageTTL=n with no body; a JSON int body is accepted too.
			if q := r.URL.Query().Get("messageTTL"); q != "" {
				v, err := strconv.Atoi(q)
				if err != nil || v < 0 {
					return fmt.Errorf("%w: messageTTL must be a number of seconds >= 0", ErrBadRequest)
				}
				tp.MessageTTLInSeconds = &v
				return nil
			}
			return decodeIntPolicy(&tp.MessageTTLInSeconds, "messageTTL")(tp, r)
		},
		remove: func(tp *resources.TopicPolicies) { tp.MessageTTLInSeconds = nil },
	},
	{
		name:    "retention",
		get:     func(tp *resources.TopicPolicies) any { return tp.RetentionPolicies },
		applied: func(ns *resources.Policies) any { return ns.RetentionPolicies },
		set: func(tp *resources.TopicPolicies, r *http.Request) error {
			v := new(resources.RetentionPolicies)
			if err := decodeBody(r, v); err != nil {
				return err
			}
			tp.RetentionPolicies = v
			return nil
		},
		remove: func(tp *resources.TopicPolicies) { tp.RetentionPolicies = nil },
	},
	{
		name:    "deduplicationEnabled",
		get:     func(tp *resources.TopicPolicies) any { return tp.DeduplicationEnabled },
		applied: func(ns *resources.Policies) any { return ns.DeduplicationEnabled },
		set: func(tp *resources.TopicPolicies, r *http.Request) error {
			var v bool
			if err := decodeBody(r, &v); err != nil {
				return err
			}
			tp.DeduplicationEnabled = &v
			return nil
		},
		remove: func(tp *resources.TopicPolicies) { tp.DeduplicationEnabled = nil },
	},
	{
		name:    "maxProducers",
		get:     func(tp *resources.TopicPolicies) any { return tp.MaxProducerPerTopic },
		applied: func(ns *resources.Policies) any { return ns.MaxProducersPerTopic },
		set: func(tp *resources.TopicPolicies, r *http.Request) error {
			return decodeIntPolicy(&tp.MaxProducerPerTopic, "maxProducers")(tp, r)
		},
		remove: func(tp *resources.TopicPolicies) { tp.MaxProducerPerTopic = nil },
	},
	{
		name:    "maxConsumers",
		get:     func(tp *resources.TopicPolicies) any { return tp.MaxConsumerPerTopic },
		applied: func(ns *resources.Policies) any { return ns.MaxConsumersPerTopic },
		set: func(tp *resources.TopicPolicies, r *http.Request) error {
			return decodeIntPolicy(&tp.MaxConsumerPerTopic, "maxConsumers")(tp, r)
		},
		remove: func(tp *resources.TopicPolicies) { tp.MaxConsumerPerTopic = nil },
	},
}

func (s *server) registerTopicPolicies(mux *http.ServeMux) {
	for _, domain := range []string{"persistent", "non-persistent"} {
		s.registerTopicPoliciesOf(mux, "/admin/v2/"+domain+"/{tenant}/{namespace}/{topic}/")
	}
}

func (s *server) registerTopicPoliciesOf(mux *http.ServeMux, t string) {
	for _, pol := range append(slices.Clip(topicPolicies), moreTopicPolicies...) {
		mux.HandleFunc("GET "+t+pol.name, s.handle(func(ctx context.Context, r *http.Request) (any, error) {
			tp, ns, err := s.topicPoliciesOf(ctx, r)
			if err != nil {
				return nil, err
			}
			v := unsetAsNil(pol.get(&tp))
			if v == nil && r.URL.Query().Get("applied") == "true" {
				v = unsetAsNil(pol.applied(&ns))
			}
			return v, nil
		}))
		setter := s.handle(func(ctx context.Context, r *http.Request) (any, error) {
			return nil, s.updateTopicPolicies(ctx, r, func(tp *resources.TopicPolicies) error { return pol.set(tp, r) })
		})
		mux.HandleFunc("POST "+t+pol.name, setter)
		mux.HandleFunc("PUT "+t+pol.name, setter)
		mux.HandleFunc("DELETE "+t+pol.name, s.handle(func(ctx context.Context, r *http.Request) (any, error) {
			return nil, s.updateTopicPolicies(ctx, r, func(tp *resources.TopicPolicies) error { pol.remove(tp); return nil })
		}))
	}
	mux.HandleFunc("GET "+t+"backlogQuotaMap", s.handle(func(ctx context.Context, r *http.Request) (any, error) {
		tp, ns, err := s.topicPoliciesOf(ctx, r)
		if err != nil {
			return nil, err
		}
		m := tp.BackLogQuotaMap
		if len(m) == 0 && r.URL.Query().Get("applied") == "true" {
			m = ns.BacklogQuotaMap
		}
		if m == nil {
			m = map[string]resources.BacklogQuota{}
		}
		return m, nil
	}))
	mux.HandleFunc("POST "+t+"backlogQuota", s.handle(func(ctx context.Context, r *http.Request) (any, error) {
		typ, err := backlogQuotaType(r)
		if err != nil {
			return nil, err
		}
		q, err := decodeBacklogQuota(r)
		if err != nil {
			return nil, err
		}
		return nil, s.updateTopicPolicies(ctx, r, func(tp *resources.TopicPolicies) error {
			if tp.BackLogQuotaMap == nil {
				tp.BackLogQuotaMap = map[string]resources.BacklogQuota{}
			}
			tp.BackLogQuotaMap[typ] = q
			return nil
		})
	}))
	mux.HandleFunc("DELETE "+t+"backlogQuota", s.handle(func(ctx context.Context, r *http.Request) (any, error) {
		typ, err := backlogQuotaType(r)
		if err != nil {
			return nil, err
		}
		return nil, s.updateTopicPolicies(ctx, r, func(tp *resources.TopicPolicies) error {
			delete(tp.BackLogQuotaMap, typ)
			return nil
		})
	}))
}

// topicPoliciesOf reads the topic's policies and its namespace's.
func (s *server) topicPoliciesOf(ctx context.Context, r *http.Request) (resources.TopicPolicies, resources.Policies, error) {
	ref, err := s.topicOf(ctx, r)
	if err != nil {
		return resources.TopicPolicies{}, resources.Policies{}, err
	}
	ns, err := s.res.Namespace(ctx, ref.tenant, ref.ns)
	if err != nil {
		return resources.TopicPolicies{}, ns, err
	}
	tp, err := s.res.TopicPolicies(ctx, ref.domain, ref.tenant, ref.ns, ref.local)
	return tp, ns, err
}

func (s *server) updateTopicPolicies(ctx context.Context, r *http.Request, modify func(*resources.TopicPolicies) error) error {
	ref, err := s.topicOf(ctx, r)
	if err != nil {
		return err
	}
	return s.res.UpdateTopicPolicies(ctx, ref.domain, ref.tenant, ref.ns, ref.local, modify)
}
