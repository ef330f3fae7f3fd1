package admin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/magnetar-io/magnetar/internal/resources"
)

// policy describes one namespace policy endpoint (/admin/v2/namespaces/{t}/{ns}/{name}):
// how to read it from Policies, how to set it from a request body, and how to remove it.
// One table instead of a handler per policy keeps the endpoints uniform.
type policy struct {
	name   string
	get    func(p *resources.Policies) any
	set    func(p *resources.Policies, r *http.Request) error
	remove func(p *resources.Policies)
}

func decodeInto[T any](dst **T) func(*resources.Policies, *http.Request) error {
	return func(_ *resources.Policies, r *http.Request) error {
		v := new(T)
		if err := decodeBody(r, v); err != nil {
			return err
		}
		*dst = v
		return nil
	}
}

var namespacePolicies = []policy{
	{
		name: "retention",
		get:  func(p *resources.Policies) any { return p.RetentionPolicies },
		set: func(p *resources.Policies, r *http.Request) error {
			return decodeInto(&p.RetentionPolicies)(p, r)
		},
		remove: func(p *resources.Policies) { p.RetentionPolicies = nil },
	},
	{
		name: "messageTTL",
		get:  func(p *resources.Policies) any { return p.MessageTTLInSeconds },
		set: func(p *resources.Policies, r *http.Request) error {
			var ttl int
			if err := decodeBody(r, &ttl); err != nil {
				return err
			}
			if ttl < 0 {
				return fmt.Errorf("%w: messageTTL must be >= 0, got %d", ErrBadRequest, ttl)
			}
			p.MessageTTLInSeconds = &ttl
			return nil
		},
		remove: func(p *resources.Policies) { p.MessageTTLInSeconds = nil },
	},
	{
		name: "deduplication",
		get:  func(p *resources.Policies) any { return p.DeduplicationEnabled },
		set: func(p *resources.Policies, r *http.Request) error {
			return decodeInto(&p.DeduplicationEnabled)(p, r)
		},
		remove: func(p *resources.Policies) { p.DeduplicationEnabled = nil },
	},
	{
		name: "autoTopicCreation",
		get:  func(p *resources.Policies) any { return p.AutoTopicCreationOverride },
		set: func(p *resources.Policies, r *http.Request) error {
			if err := decodeInto(&p.AutoTopicCreationOverride)(p, r); err != nil {
				return err
			}
			return checkAutoTopicCreation(p.AutoTopicCreationOverride)
		},
		remove: func(p *resources.Policies) { p.AutoTopicCreationOverride = nil },
	},
	{
		name: "persistence",
		get:  func(p *resources.Policies) any { return p.Persistence },
		set: func(p *resources.Policies, r *http.Request) error {
			if err := decodeInto(&p.Persistence)(p, r); err != nil {
				return err
			}
			e, w, a := p.Persistence.BookkeeperEnsemble, p.Persistence.BookkeeperWriteQuorum, p.Persistence.BookkeeperAckQuorum
			if !(e >= w && w >= a && a >= 1) {
				return fmt.Errorf("%w: need bookkeeperEnsemble >= bookkeeperWriteQuorum >= bookkeeperAckQuorum >= 1, got %d/%d/%d", ErrBadRequest, e, w, a)
			}
			return nil
		},
		remove: func(p *resources.Policies) { p.Persistence = nil },
	},
	{
		name:   "maxProducersPerTopic",
		get:    func(p *resources.Policies) any { return p.MaxProducersPerTopic },
		set:    func(p *resources.Policies, r *http.Request) error { return decodeLimit(&p.MaxProducersPerTopic, r) },
		remove: func(p *resources.Policies) { p.MaxProducersPerTopic = nil },
	},
	{
		name:   "maxConsumersPerTopic",
		get:    func(p *resources.Policies) any { return p.MaxConsumersPerTopic },
		set:    func(p *resources.Policies, r *http.Request) error { return decodeLimit(&p.MaxConsumersPerTopic, r) },
		remove: func(p *resources.Policies) { p.MaxConsumersPerTopic = nil },
	},
	{
		name: "properties",
		get:  func(p *resources.Policies) any { return nonNilMap(p.Properties) },
		set: func(p *resources.Policies, r *http.Request) error {
			var m map[string]string
			if err := decodeBody(r, &m); err != nil {
				return err
			}
			if p.Properties == nil {
				p.Properties = map[string]string{}
			}
			for k, v := range m {
				p.Properties[k] = v
			}
			return nil
		},
		remove: func(p *resources.Policies) { p.Properties = nil },
	},
}

func nonNilMap(m map[string]string) map[string]string {
	if m == nil {
		return map[string]string{}
	}
	return m
}

// backlogQuotaType returns the quota type of a request (query backlogQuotaType), defaulting
// to destination_storage as Pulsar does.
func backlogQuotaType(r *http.Request) (string, error) {
	t := r.URL.Query().Get("backlogQuotaType")
	switch t {
	case "":
		return "destination_storage", nil
	case "destination_storage", "message_age":
		return t, nil
	}
	return "", fmt.Errorf("%w: backlogQuotaType must be destination_storage or message_age", ErrBadRequest)
}

// backlogQuotaBody accepts Pulsar's BacklogQuota and the legacy {"limit": "10240"} form.
type backlogQuotaBody struct {
	resources.BacklogQuota
	Limit json.RawMessage `json:"limit"`
}

func (s *server) registerPolicies(mux *http.ServeMux) {
	const base = "/admin/v2/namespaces/{tenant}/{namespace}/"
	for _, pol := range append(slices.Clip(namespacePolicies), moreNamespacePolicies...) {
		mux.HandleFunc("GET "+base+pol.name, s.handle(func(ctx context.Context, r *http.Request) (any, error) {
			p, err := s.namespacePolicies(ctx, r)
			if err != nil {
				return nil, err
			}
			return unsetAsNil(pol.get(&p)), nil
		}))
		setter := s.handle(func(ctx context.Context, r *http.Request) (any, error) {
			return nil, s.updatePolicies(ctx, r, func(p *resources.Policies) error { return pol.set(p, r) })
		})
		mux.HandleFunc("POST "+base+pol.name, setter)
		mux.HandleFunc("PUT "+base+pol.name, setter)
		mux.HandleFunc("DELETE "+base+pol.name, s.handle(func(ctx context.Context, r *http.Request) (any, error) {
			return nil, s.updatePolicies(ctx, r, func(p *resources.Policies) error { pol.remove(p); return nil })
		}))
	}
	// Pulsar removes namespace offload policies at their own path.
	mux.HandleFunc("DELETE "+base+"removeOffloadPolicies", s.handle(func(ctx context.Context, r *http.Request) (any, error) {
		return nil, s.updatePolicies(ctx, r, func(p *resources.Policies) error { p.OffloadPolicies = nil; return nil })
	}))
	mux.HandleFunc("GET "+base+"backlogQuotaMap", s.handle(func(ctx context.Context, r *http.Request) (any, error) {
		p, err := s.namespacePolicies(ctx, r)
		if err != nil {
			return nil, err
		}
		if p.BacklogQuotaMap == nil {
			return map[string]resources.BacklogQuota{}, nil
		}
		return p.BacklogQuotaMap, nil
	}))
	mux.HandleFunc("POST "+base+"backlogQuota", s.handle(s.setBacklogQuota))
	mux.HandleFunc("DELETE "+base+"backlogQuota", s.handle(func(ctx context.Context, r *http.Request) (any, error) {
		typ, err := backlogQuotaType(r)
		if err != nil {
			return nil, err
		}
		return nil, s.updatePolicies(ctx, r, func(p *resources.Policies) error { delete(p.BacklogQuotaMap, typ); return nil })
	}))
	mux.HandleFunc("GET "+base+"permissions", s.handle(func(ctx context.Context, r *http.Request) (any, error) {
		p, err := s.namespacePolicies(ctx, r)
		if err != nil {
			return nil, err
		}
		if p.AuthPolicies.NamespaceAuth == nil {
			return map[string][]string{}, nil
		}
		return p.AuthPolicies.NamespaceAuth, nil
	}))
	mux.HandleFunc("POST "+base+"permissions/{role}", s.handle(s.grantPermission))
	mux.HandleFunc("DELETE "+base+"permissions/{role}", s.handle(func(ctx context.Context, r *http.Request) (any, error) {
		return nil, s.updatePolicies(ctx, r, func(p *resources.Policies) error {
			delete(p.AuthPolicies.NamespaceAuth, r.PathValue("role"))
			return nil
		})
	}))
}

// unsetAsNil turns a typed nil pointer (an unset policy) into nil, which the handler answers
// with 204 and no body, as Pulsar answers a null policy; clients decode that as "not set".
func unsetAsNil(v any) any {
	if b, _ := json.Marshal(v); string(b) == "null" {
		return nil
	}
	return v
}

// namespaceErr names the namespace in err, except in a reason that is Pulsar's text
// exactly (clients compare it). A missing namespace (or tenant) gets Pulsar's reason, its
// name in the detail.
func (s *server) namespaceErr(ctx context.Context, r *http.Request, err error) error {
	if re := reasonError(""); errors.As(err, &re) {
		return re
	}
	if errors.Is(err, resources.ErrNotFound) {
		return s.namespaceMissingErr(ctx, r.PathValue("tenant"), r.PathValue("namespace"), err)
	}
	return fmt.Errorf("namespace %s/%s: %w", r.PathValue("tenant"), r.PathValue("namespace"), err)
}

func (s *server) namespacePolicies(ctx context.Context, r *http.Request) (resources.Policies, error) {
	p, err := s.res.Namespace(ctx, r.PathValue("tenant"), r.PathValue("namespace"))
	if err != nil {
		return p, s.namespaceErr(ctx, r, err)
	}
	return p, nil
}

func (s *server) updatePolicies(ctx context.Context, r *http.Request, modify func(*resources.Policies) error) error {
	err := s.res.UpdateNamespace(ctx, r.PathValue("tenant"), r.PathValue("namespace"), modify)
	if err != nil {
		return s.namespaceErr(ctx, r, err)
	}
	return nil
}

func (s *server) setBacklogQuota(ctx context.Context, r *http.Request) (any, error) {
	typ, err := backlogQuotaType(r)
	if err != nil {
		return nil, err
	}
	q, err := decodeBacklogQuota(r)
	if err != nil {
		return nil, err
	}
	return nil, s.updatePolicies(ctx, r, func(p *resources.Policies) error {
		if p.BacklogQuotaMap == nil {
			p.BacklogQuotaMap = map[string]resources.BacklogQuota{}
		}
		p.BacklogQuotaMap[typ] = q
		return nil
	})
}

func (s *server) grantPermission(ctx context.Context, r *http.Request) (any, error) {
	actions, err := decodeActions(r)
	if err != nil {
		return nil, err
	}
	return nil, s.updatePolicies(ctx, r, func(p *resources.Policies) error {
		if p.AuthPolicies.NamespaceAuth == nil {
			p.AuthPolicies.NamespaceAuth = map[string][]string{}
		}
		p.AuthPolicies.NamespaceAuth[r.PathValue("role")] = actions
		return nil
	})
}

// decodeBacklogQuota reads a BacklogQuota body (namespace and topic endpoints).
func decodeBacklogQuota(r *http.Request) (resources.BacklogQuota, error) {
	var body backlogQuotaBody
	if err := decodeBody(r, &body); err != nil {
		return resources.BacklogQuota{}, err
	}
	q := body.BacklogQuota
	if len(body.Limit) > 0 && q.LimitSize == 0 {
		n, err := strconv.ParseInt(strings.Trim(string(body.Limit), `"`), 10, 64)
		if err != nil {
			return q, fmt.Errorf("%w: limit must be a number of bytes", ErrBadRequest)
		}
		q.LimitSize = n
	}
	switch q.Policy {
	case "producer_request_hold", "producer_exception", "consumer_backlog_eviction":
	default:
		return q, fmt.Errorf("%w: policy must be producer_request_hold, producer_exception or consumer_backlog_eviction", ErrBadRequest)
	}
	return q, nil
}

// decodeLimit reads a non-negative int body (0: unlimited) into dst.
func decodeLimit(dst **int, r *http.Request) error {
	var v int
	if err := decodeBody(r, &v); err != nil {
		return err
	}
	if v < 0 {
		return fmt.Errorf("%w: limit must be >= 0, got %d", ErrBadRequest, v)
	}
	*dst = &v
	return nil
}

// checkAutoTopicCreation validates an override with Pulsar's reasons (pulsaradmin compares
// them). Disabling needs no type. An absent defaultNumPartitions decodes as 0, so 0 reads
// as "null" here.
func checkAutoTopicCreation(o *resources.AutoTopicCreationOverride) error {
	const pre = "Invalid configuration for autoTopicCreationOverride. the detail is "
	switch {
	case !o.AllowAutoTopicCreation:
		return nil
	case o.TopicType == "partitioned" && o.DefaultNumPartitions == 0:
		return reasonError(pre + "[defaultNumPartitions] cannot be null when the type is partitioned.")
	case o.TopicType == "partitioned" && o.DefaultNumPartitions < 1:
		return reasonError(pre + "[defaultNumPartitions] cannot be less than 1 for partition type.")
	case o.TopicType == "non-partitioned" && o.DefaultNumPartitions != 0:
		return reasonError(pre + "[defaultNumPartitions] is not allowed to be set when the type is non-partition.")
	case o.TopicType != "partitioned" && o.TopicType != "non-partitioned":
		return reasonError(pre + "[topicType] must be partitioned or non-partitioned.")
	}
	return nil
}
