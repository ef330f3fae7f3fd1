package auth

import (
	"context"
	"fmt"
)

// tlsProvider is AuthenticationProviderTls: the role is the common name of the client
// certificate the TLS handshake verified against tlsTrustCertsFilePath. A certificate that
// was not verified (tlsAllowInsecureConnection, another CA) never reaches it.
type tlsProvider struct{}

func (tlsProvider) Method() string { return MethodTLS }

func (tlsProvider) Authenticate(_ context.Context, c Credentials) (Identity, error) {
	if len(c.PeerCertificates) == 0 {
		return Identity{}, fmt.Errorf("%w: tls: no trusted client certificate", ErrAuthentication)
	}
	leaf := c.PeerCertificates[0]
	if leaf.Subject.CommonName == "" {
		return Identity{}, fmt.Errorf("%w: tls: client certificate has no common name", ErrAuthentication)
	}
	// A connection lives no longer than its certificate.
	return Identity{Role: leaf.Subject.CommonName, Method: MethodTLS, Expires: leaf.NotAfter}, nil
}
