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
	return &cachedPolicies{p: p, ttl: ttl, max: max, tenants: map[string]cachedTenant{}, ns: map[string]cachedNamespace{}}
}

type cachedPolicies struct {
	p   Policies
	ttl time.Duration
	max int

	mu      sync.Mutex
	tenants map[string]cachedTenant
	ns      map[string]cachedNamespace
}

type cachedTenant struct {
	v   TenantPolicy
	err error
	at  time.Time
}

type cachedNamespace struct {
	v   NamespacePolicy
	err error
	at  time.Time
}

func (c *cachedPolicies) Tenant(ctx context.Context, tenant string) (TenantPolicy, error) {
	now := time.Now()
	c.mu.Lock()
	e, ok := c.tenants[tenant]
	c.mu.Unlock()
	if ok && now.Sub(e.at) < c.ttl {
		return e.v, e.err
	}
	v, err := c.p.Tenant(ctx, tenant)
	if err != nil && ctx.Err() != nil {
		return v, err // the caller gave up: nothing learned about the tenant
	}
	c.mu.Lock()
	if len(c.tenants) >= c.max {
		clear(c.tenants)
	}
	c.tenants[tenant] = cachedTenant{v, err, now}
	c.mu.Unlock()
	return v, err
}

func (c *cachedPolicies) Namespace(ctx context.Context, tenant, ns string) (NamespacePolicy, error) {
	key := tenant + "/" + ns
	now := time.Now()
	c.mu.Lock()
	e, ok := c.ns[key]
	c.mu.Unlock()
	if ok && now.Sub(e.at) < c.ttl {
		return e.v, e.err
	}
	v, err := c.p.Namespace(ctx, tenant, ns)
	if err != nil && ctx.Err() != nil {
		return v, err
	}
	c.mu.Lock()
	if len(c.ns) >= c.max {
		clear(c.ns)
	}
	c.ns[key] = cachedNamespace{v, err, now}
	c.mu.Unlock()
	return v, err
}
