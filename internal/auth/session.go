package auth

import (
	"context"
	"crypto/x509"
	"fmt"
	"sync"
	"time"
)

// Principal is who an operation is authorized for: the connection's role, and when a proxy
// connected on a client's behalf, the client's (original) role. Both must be allowed (the
// proxy's role is usually a superuser); authorizing only the proxy would be a confused
// deputy (CVE-2023-30429).
type Principal struct {
	Role     string
	Original string
}

// Effective is the role authorization judges: the original principal when a proxy
// connected on someone's behalf, otherwise the authenticated role ("" when anonymous
// without anonymousUserRole or with authentication off).
func (p Principal) Effective() string {
	if p.Original != "" {
		return p.Original
	}
	return p.Role
}

// String names the principal in logs.
func (p Principal) String() string {
	if p.Original != "" {
		return p.Original + " (via " + p.Role + ")"
	}
	return p.Role
}

// Connect is what CONNECT carries about authentication.
type Connect struct {
	Method           string
	Data             []byte
	PeerCertificates []*x509.Certificate // verified chain, leaf first
	Remote           string
	// Set by a proxy connecting on a client's behalf.
	OriginalPrincipal, OriginalAuthMethod string
	OriginalAuthData                      []byte
	// SupportsRefresh is CONNECT's feature_flags.supports_auth_refresh.
	SupportsRefresh bool
}

// Session is one binary connection's authentication: who connected, for whom, and whether
// their credentials still hold. The broker (or proxy) calls Tick every RefreshCheck and
// Respond on AUTH_RESPONSE.
//
// Refresh: when the tracked credentials expire, Tick asks for an AUTH_CHALLENGE (if the
// client advertised supports_auth_refresh; otherwise it closes). A client that has not
// answered with valid credentials of the same role by the next Tick is disconnected, so no
// connection outlives its credentials by more than two check intervals.
type Session struct {
	svc *Service
	// certs are the connection's TLS certificates, reused when a tls client re-authenticates.
	certs  []*x509.Certificate
	remote string

	mu        sync.Mutex
	conn      Identity // who connected (a proxy, or the client itself)
	original  string   // original principal, when a proxy connected
	orig      Identity // the original principal's verified identity (authenticateOriginalAuthData)
	origAuth  bool     // orig was authenticated here, so it is what expires and refreshes
	refresh   bool
	challenge bool // an AUTH_CHALLENGE is outstanding
}

// Connect authenticates a CONNECT. It fails (ErrAuthentication) on bad credentials and on a
// non-proxy trying to speak for someone else.
func (s *Service) Connect(ctx context.Context, c Connect) (*Session, error) {
	id, err := s.Authenticate(ctx, Credentials{Method: c.Method, Data: c.Data, PeerCertificates: c.PeerCertificates, Remote: c.Remote})
	if err != nil {
		return nil, err
	}
	se := &Session{svc: s, certs: c.PeerCertificates, remote: c.Remote, conn: id, refresh: c.SupportsRefresh}
	if !s.Enabled() {
		return se, nil
	}
	isProxy := s.IsProxyRole(id.Role)
	switch {
	case c.OriginalPrincipal == "" && len(c.OriginalAuthData) == 0:
	case !isProxy:
		return nil, s.fail(Credentials{Method: c.Method, Remote: c.Remote},
			fmt.Errorf("%w: role %s is not in proxyRoles and may not connect on behalf of %q", ErrAuthentication, id.Role, c.OriginalPrincipal))
	case s.IsProxyRole(c.OriginalPrincipal):
		return nil, s.fail(Credentials{Method: c.Method, Remote: c.Remote},
			fmt.Errorf("%w: the original principal %q is itself a proxy role", ErrAuthentication, c.OriginalPrincipal))
	default:
		se.original = c.OriginalPrincipal
		if s.checkOrig {
			oid, err := s.Authenticate(ctx, Credentials{Method: c.OriginalAuthMethod, Data: c.OriginalAuthData, Remote: c.Remote})
			if err != nil {
				return nil, err
			}
			if se.original != "" && oid.Role != se.original {
				return nil, s.fail(Credentials{Method: c.OriginalAuthMethod, Remote: c.Remote},
					fmt.Errorf("%w: the original credentials are for %q, not the original principal %q", ErrAuthentication, oid.Role, se.original))
			}
			se.original, se.orig, se.origAuth = oid.Role, oid, true
		}
		if se.original == "" {
			return nil, fmt.Errorf("%w: a proxy must name the original principal", ErrAuthentication)
		}
	}
	return se, nil
}

// Principal is who the connection's operations are authorized for.
func (se *Session) Principal() Principal {
	se.mu.Lock()
	defer se.mu.Unlock()
	return Principal{Role: se.conn.Role, Original: se.original}
}

// Identity is the connection's own authenticated identity.
func (se *Session) Identity() Identity {
	se.mu.Lock()
	defer se.mu.Unlock()
	return se.conn
}

// Refresh actions Tick asks for.
type RefreshAction int

const (
	RefreshNone      RefreshAction = iota
	RefreshChallenge               // send AUTH_CHALLENGE
	RefreshClose                   // disconnect
)

// RefreshData is the challenge payload Pulsar sends to ask for fresh credentials.
var RefreshData = []byte("PulsarAuthRefresh")

// Tick checks the credentials at now and says what to do. method is the auth method to name
// in the AUTH_CHALLENGE.
func (se *Session) Tick(now time.Time) (act RefreshAction, method, reason string) {
	se.mu.Lock()
	defer se.mu.Unlock()
	if !se.svc.Enabled() {
		return RefreshNone, "", ""
	}
	tracked := &se.conn
	if se.origAuth {
		tracked = &se.orig
	}
	if se.challenge {
		return RefreshClose, "", "did not answer the authentication challenge with valid credentials"
	}
	if !tracked.Expired(now) {
		return RefreshNone, "", ""
	}
	if !se.refresh {
		return RefreshClose, "", "credentials expired and the client cannot refresh them"
	}
	se.challenge = true
	return RefreshChallenge, tracked.Method, ""
}

// Respond checks the credentials of an AUTH_RESPONSE. They must authenticate and belong to
// the same role as before; any error means the connection must close.
func (se *Session) Respond(ctx context.Context, method string, data []byte) error {
	se.mu.Lock()
	tracked := se.conn
	if se.origAuth {
		tracked = se.orig
	}
	se.mu.Unlock()
	if method == "" {
		method = tracked.Method
	}
	id, err := se.svc.Authenticate(ctx, Credentials{Method: method, Data: data, PeerCertificates: se.certs, Remote: se.remote})
	if err != nil {
		return err
	}
	if id.Role != tracked.Role {
		return se.svc.fail(Credentials{Method: method, Remote: se.remote},
			fmt.Errorf("%w: refreshed credentials are for %q, not %q", ErrAuthentication, id.Role, tracked.Role))
	}
	if id.Expired(se.svc.now()) {
		return fmt.Errorf("%w: refreshed credentials have already expired", ErrAuthentication)
	}
	se.mu.Lock()
	defer se.mu.Unlock()
	if se.origAuth {
		se.orig = id
	} else {
		se.conn = id
	}
	se.challenge = false
	return nil
}
