package auth

import (
	"context"
	"crypto/x509"
	"net/http"
	"strings"
	"time"
)

// Auth method names, as clients send them in CONNECT.auth_method_name and providers answer
// to them. OpenID Connect tokens arrive as "token", like Pulsar's.
const (
	MethodToken = "token"
	MethodTLS   = "tls"
	MethodBasic = "basic"
)

// Credentials is what a client presented, on the binary protocol or over HTTP.
type Credentials struct {
	// Method is CONNECT.auth_method_name (or AUTH_RESPONSE's); for HTTP, the
	// X-Pulsar-Auth-Method-Name header when given.
	Method string
	// Data is CONNECT.auth_data / AUTH_RESPONSE data (binary protocol only).
	Data []byte
	// HTTP says the credentials came over HTTP; Authorization is then its header.
	HTTP          bool
	Authorization string
	// PeerCertificates is the client's certificate chain, leaf first, set only when the TLS
	// handshake verified it against the trusted CAs.
	PeerCertificates []*x509.Certificate
	// Remote is the client's address, for logs.
	Remote string
}

// bearer returns the token of an "Authorization: Bearer <token>" header.
func (c *Credentials) bearer() (string, bool) {
	scheme, tok, ok := strings.Cut(strings.TrimSpace(c.Authorization), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	return strings.TrimSpace(tok), true
}

// Identity is an authenticated client.
type Identity struct {
	// Role is the authenticated role (a token's subject, a certificate's CN, a user).
	Role string
	// Method is the provider's auth method name ("" for the anonymous role).
	Method string
	// Expires is when the credentials stop being valid; zero means they do not expire.
	// A binary connection is challenged to refresh after this (see Session).
	Expires time.Time
	// Anonymous says no credentials were given and Role is anonymousUserRole.
	Anonymous bool
}

// Expired tells whether the credentials had expired at now.
func (id Identity) Expired(now time.Time) bool {
	return !id.Expires.IsZero() && !now.Before(id.Expires)
}

// Provider authenticates one kind of credentials. Several providers may answer to the same
// method name (a static-key token provider and an OpenID provider both take "token"); the
// service tries them in configuration order.
type Provider interface {
	// Method is the auth method name the provider answers to.
	Method() string
	// Authenticate checks the credentials and returns who they belong to. Errors wrap
	// ErrAuthentication and say why, without echoing secrets.
	Authenticate(ctx context.Context, c Credentials) (Identity, error)
}

// httpCredentials extracts the credentials of an HTTP request.
func httpCredentials(r *http.Request) Credentials {
	c := Credentials{HTTP: true, Method: r.Header.Get("X-Pulsar-Auth-Method-Name"),
		Authorization: r.Header.Get("Authorization"), Remote: r.RemoteAddr}
	if r.TLS != nil && len(r.TLS.VerifiedChains) > 0 {
		c.PeerCertificates = r.TLS.PeerCertificates
	}
	return c
}
