package auth

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/magnetar-io/magnetar/internal/config"
)

// providerNames maps Pulsar's provider class names, and our short names, to a kind.
var providerNames = map[string]string{
	"org.apache.pulsar.broker.authentication.AuthenticationProviderToken":       "token",
	"org.apache.pulsar.broker.authentication.AuthenticationProviderTls":         "tls",
	"org.apache.pulsar.broker.authentication.AuthenticationProviderBasic":       "basic",
	"org.apache.pulsar.broker.authentication.oidc.AuthenticationProviderOpenID": "openid",
	"token": "token", "tls": "tls", "basic": "basic", "openid": "openid",
}

// Service authenticates clients for one process (broker, proxy, standalone): the configured
// providers, the anonymous role and the proxy rules. It is safe for concurrent use.
type Service struct {
	enabled   bool
	anonymous string
	byMethod  map[string][]Provider
	methods   []string // in configuration order, for error messages
	proxies   map[string]bool
	checkOrig bool
	refresh   time.Duration
	now       func() time.Time
	log       *slog.Logger
}

// ServiceOptions are the collaborators of a Service.
type ServiceOptions struct {
	Logger *slog.Logger
	// Now is the clock (nil: time.Now); tests move it to expire tokens.
	Now func() time.Time
	// Extra providers, tried after the configured ones for their method (tests, plugins).
	Extra []Provider
}

// NewService builds the providers named in cfg. With authentication disabled it builds none
// and every client is anonymous.
func NewService(cfg config.AuthenticationConfig, opts ServiceOptions) (*Service, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadConfig, err)
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	s := &Service{enabled: cfg.Enabled, anonymous: cfg.AnonymousUserRole, byMethod: map[string][]Provider{},
		proxies: map[string]bool{}, checkOrig: cfg.AuthenticateOriginalAuthData, refresh: cfg.RefreshCheck(),
		now: opts.Now, log: opts.Logger.With("component", "auth")}
	for _, r := range cfg.ProxyRoles {
		s.proxies[r] = true
	}
	if !cfg.Enabled {
		return s, nil
	}
	seen := map[string]bool{}
	for _, name := range cfg.Providers {
		kind, ok := providerNames[strings.TrimSpace(name)]
		if !ok {
			return nil, fmt.Errorf("%w: authenticationProviders: unknown provider %q (known: token, tls, basic, openid and their Pulsar class names)", ErrBadConfig, name)
		}
		if seen[kind] {
			continue
		}
		seen[kind] = true
		var p Provider
		var err error
		switch kind {
		case "token":
			p, err = newTokenProvider(cfg.Token, opts.Now)
		case "tls":
			p = tlsProvider{}
		case "basic":
			p, err = newBasicProvider(cfg.Basic.Conf)
		case "openid":
			p, err = newOpenIDProvider(cfg.OpenID, opts.Now)
		}
		if err != nil {
			return nil, err
		}
		s.add(p)
	}
	for _, p := range opts.Extra {
		s.add(p)
	}
	return s, nil
}

func (s *Service) add(p Provider) {
	m := p.Method()
	if _, ok := s.byMethod[m]; !ok {
		s.methods = append(s.methods, m)
	}
	s.byMethod[m] = append(s.byMethod[m], p)
}

// Enabled says whether clients must authenticate.
func (s *Service) Enabled() bool { return s != nil && s.enabled }

// RefreshCheck is how often connections' credentials are checked for expiry.
func (s *Service) RefreshCheck() time.Duration { return s.refresh }

// IsProxyRole tells whether role is one of proxyRoles.
func (s *Service) IsProxyRole(role string) bool { return s.proxies[role] }

// Methods lists the accepted auth method names.
func (s *Service) Methods() []string { return slices.Clone(s.methods) }

// Authenticate checks binary-protocol credentials (CONNECT or AUTH_RESPONSE). A client that
// names no method (or "none") gets the anonymous role if one is configured; a client that
// names a method nobody here answers to is refused, rather than silently made anonymous.
func (s *Service) Authenticate(ctx context.Context, c Credentials) (Identity, error) {
	if !s.Enabled() {
		return Identity{Role: s.anonymous, Anonymous: true}, nil
	}
	switch c.Method {
	case "", "none":
		return s.anonymousIdentity(c)
	}
	ps, ok := s.byMethod[c.Method]
	if !ok {
		return Identity{}, s.fail(c, fmt.Errorf("%w: unknown auth method %q (this server accepts %s)", ErrAuthentication, c.Method, strings.Join(s.methods, ", ")))
	}
	return s.try(ctx, ps, c)
}

func (s *Service) anonymousIdentity(c Credentials) (Identity, error) {
	if s.anonymous == "" {
		return Identity{}, s.fail(c, fmt.Errorf("%w: no credentials given and no anonymousUserRole is configured", ErrAuthentication))
	}
	return Identity{Role: s.anonymous, Anonymous: true}, nil
}

// try runs the providers of one method in order; the first that accepts wins.
func (s *Service) try(ctx context.Context, ps []Provider, c Credentials) (Identity, error) {
	var errs []error
	for _, p := range ps {
		id, err := p.Authenticate(ctx, c)
		if err == nil {
			return id, nil
		}
		errs = append(errs, err)
	}
	err := errs[0]
	if len(errs) > 1 {
		err = errors.Join(errs...)
	}
	return Identity{}, s.fail(c, err)
}

func (s *Service) fail(c Credentials, err error) error {
	s.log.Warn("authentication failed", "remote", c.Remote, "method", c.Method, "http", c.HTTP, "err", err)
	return err
}

// AuthenticateHTTP checks an HTTP request's credentials. X-Pulsar-Auth-Method-Name picks a
// provider; otherwise the Authorization header's scheme does (Bearer: token providers,
// Basic: basic), then a verified client certificate (tls), then the anonymous role. Unlike
// Pulsar, credentials that were given and fail are refused, never downgraded to anonymous.
func (s *Service) AuthenticateHTTP(r *http.Request) (Identity, error) {
	if !s.Enabled() {
		return Identity{Role: s.anonymous, Anonymous: true}, nil
	}
	c := httpCredentials(r)
	if c.Method != "" {
		ps, ok := s.byMethod[c.Method]
		if !ok {
			return Identity{}, s.fail(c, fmt.Errorf("%w: unknown auth method %q (this server accepts %s)", ErrAuthentication, c.Method, strings.Join(s.methods, ", ")))
		}
		return s.try(r.Context(), ps, c)
	}
	if c.Authorization != "" {
		scheme, _, _ := strings.Cut(strings.TrimSpace(c.Authorization), " ")
		method := map[string]string{"bearer": MethodToken, "basic": MethodBasic}[strings.ToLower(scheme)]
		ps, ok := s.byMethod[method]
		if !ok {
			return Identity{}, s.fail(c, fmt.Errorf("%w: Authorization scheme %q is not accepted here (methods: %s)", ErrAuthentication, scheme, strings.Join(s.methods, ", ")))
		}
		c.Method = method
		return s.try(r.Context(), ps, c)
	}
	if len(c.PeerCertificates) > 0 {
		if ps, ok := s.byMethod[MethodTLS]; ok {
			c.Method = MethodTLS
			return s.try(r.Context(), ps, c)
		}
	}
	return s.anonymousIdentity(c)
}
