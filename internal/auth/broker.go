package auth

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/magnetar-io/magnetar/internal/config"
)

// BrokerSecurity is what a broker's front ends use from its security settings.
type BrokerSecurity struct {
	// Authn authenticates clients (always set; Enabled() says whether it is on).
	Authn *Service
	// Authz decides what they may do (always set; Enabled() says whether it is on).
	Authz *Authorizer
	// TLS is the TLS listeners' configuration (nil when no certificate is configured).
	TLS *ServerTLS
}

// NewBrokerSecurity builds the broker's security from cfg over the permissions in pol.
func NewBrokerSecurity(cfg config.SecurityConfig, pol Policies, log *slog.Logger) (*BrokerSecurity, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	authn, err := NewService(cfg.Authn, ServiceOptions{Logger: log})
	if err != nil {
		return nil, err
	}
	authz, err := NewAuthorizer(cfg.Authz, pol, log)
	if err != nil {
		return nil, err
	}
	b := &BrokerSecurity{Authn: authn, Authz: authz}
	if cfg.TLS.Configured() {
		if b.TLS, err = NewServerTLS(cfg.TLS, log); err != nil {
			return nil, err
		}
	}
	return b, nil
}

// CachedPolicies remembers what p answers for ttl, at most max entries, so a burst of
// lookups does not become a burst of metadata reads. A revoked permission is thus seen at
// most ttl late by new requests (live producers and consumers are rechecked on their own
// interval, authorizationRecheckIntervalSeconds).
func CachedPolicies(p Policies, ttl time.Duration, max int) Policies {
	return &cachedPolicies{p: p, tenants: newTTLCache[TenantPolicy](ttl, max), ns: newTTLCache[NamespacePolicy](ttl, max)}
}

type cachedPolicies struct {
	p       Policies
	tenants *ttlCache[TenantPolicy]
	ns      *ttlCache[NamespacePolicy]
}

func (c *cachedPolicies) Tenant(ctx context.Context, tenant string) (TenantPolicy, error) {
	return c.tenants.get(ctx, tenant, func() (TenantPolicy, error) { return c.p.Tenant(ctx, tenant) })
}

func (c *cachedPolicies) Namespace(ctx context.Context, tenant, ns string) (NamespacePolicy, error) {
	return c.ns.get(ctx, tenant+"/"+ns, func() (NamespacePolicy, error) { return c.p.Namespace(ctx, tenant, ns) })
}

// ttlCache remembers answers (errors too: a missing tenant stays missing for ttl) for ttl,
// and forgets everything when it holds max.
type ttlCache[T any] struct {
	ttl time.Duration
	max int
	mu  sync.Mutex
	m   map[string]ttlEntry[T]
}

type ttlEntry[T any] struct {
	v   T
	err error
	at  time.Time
}

func newTTLCache[T any](ttl time.Duration, max int) *ttlCache[T] {
	return &ttlCache[T]{ttl: ttl, max: max, m: map[string]ttlEntry[T]{}}
}

func (c *ttlCache[T]) get(ctx context.Context, key string, load func() (T, error)) (T, error) {
	now := time.Now()
	c.mu.Lock()
	e, ok := c.m[key]
	c.mu.Unlock()
	if ok && now.Sub(e.at) < c.ttl {
		return e.v, e.err
	}
	v, err := load()
	if err != nil && ctx.Err() != nil {
		return v, err // the caller gave up: nothing learned
	}
	c.mu.Lock()
	if len(c.m) >= c.max {
		clear(c.m)
	}
	c.m[key] = ttlEntry[T]{v, err, now}
	c.mu.Unlock()
	return v, err
}
