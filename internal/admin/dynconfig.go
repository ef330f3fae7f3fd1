package admin

import (
	"context"
	"fmt"
	"net/http"
)

// DynamicConfig is the broker's runtime-tunable configuration, as Pulsar's
// /admin/v2/brokers/configuration endpoints expose it. Set and Delete persist the change in
// the metadata store (every broker watches it) and apply it at once; an unknown key is an
// error wrapping ErrNotAllowed (412), a bad value one wrapping ErrBadRequest (400).
type DynamicConfig interface {
	Names() []string
	Values() map[string]string
	Set(ctx context.Context, name, value string) error
	Delete(ctx context.Context, name string) error
	// TopicLevelMetrics is exposeTopicLevelMetricsInPrometheus.
	TopicLevelMetrics() bool
	// ForceDeleteNamespaceAllowed and ForceDeleteTenantAllowed are Pulsar's keys of the same
	// names (nsdelete.go).
	ForceDeleteNamespaceAllowed() bool
	ForceDeleteTenantAllowed() bool
}

// dynamicConfigNames lists the keys that can change at run time.
func (s *server) dynamicConfigNames(context.Context, *http.Request) (any, error) {
	if s.dynamic == nil {
		return []string{}, nil
	}
	return s.dynamic.Names(), nil
}

// dynamicConfigValues is every dynamic key's current value (Pulsar answers the overridden
// ones; tools only display the map, and the full one says what is in force).
func (s *server) dynamicConfigValues(context.Context, *http.Request) (any, error) {
	if s.dynamic == nil {
		return map[string]string{}, nil
	}
	return s.dynamic.Values(), nil
}

// updateDynamicConfig is POST .../configuration/{name}/{value} (set) and DELETE
// .../configuration/{name} (back to the start value).
func (s *server) updateDynamicConfig(ctx context.Context, r *http.Request) (any, error) {
	name := r.PathValue("name")
	if s.dynamic == nil {
		return nil, fmt.Errorf("%w: %s is not a dynamic configuration key", ErrNotAllowed, name)
	}
	if r.Method == http.MethodDelete {
		return nil, s.dynamic.Delete(ctx, name)
	}
	if err := s.dynamic.Set(ctx, name, r.PathValue("value")); err != nil {
		return nil, err
	}
	// Pulsar answers 200 with no body (Response.ok()), which pulsaradmin's
	// TestUpdateDynamicConfigurationWithCustomURL checks.
	return textResponse(""), nil
}

// topicLevelMetrics reports whether per-topic series are exported (default: yes).
func topicLevelMetrics(d DynamicConfig) bool { return d == nil || d.TopicLevelMetrics() }
