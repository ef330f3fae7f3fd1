package proxy

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"log/slog"
	"net"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/magnetar-io/magnetar/internal/auth"
	"github.com/magnetar-io/magnetar/internal/config"
	"github.com/magnetar-io/magnetar/internal/wire/pb"
)

// Security of the proxy (proxy.conf's keys, internal/auth doing the checks):
//
//   - TLS listeners (servicePortTls, webServicePortTls) beside or instead of plaintext ones.
//   - With authenticationEnabled the proxy authenticates every client itself (CONNECT on
//     the binary side, every request on HTTP), and then speaks to brokers as itself: its own
//     credentials (brokerClientAuthenticationPlugin/Parameters, or its TLS certificate) and
//     the client's role as original_principal (plus, with forwardAuthorizationCredentials,
//     the client's credentials as original_auth_data). Brokers accept that only from a role
//     in their proxyRoles and authorize the client's role (and the proxy's), never the
//     proxy's alone: no confused deputy. A client's lookups go over connections of their own
//     whose CONNECT names it; its spliced connection closes when its credentials expire
//     (the proxy cannot refresh through a splice it does not decode), and its lookup
//     connection is challenged with AUTH_CHALLENGE like a broker's.
//   - Without authentication the proxy passes the client's CONNECT through unchanged and
//     the broker authenticates the client.
//   - tlsEnabledWithBroker: brokers are dialled at their TLS listeners, verified with
//     brokerClientTrustCertsFilePath (chain always; host names with
//     tlsHostnameVerificationEnabled); credentials are sent only after the handshake.
type security struct {
	authn     *auth.Service
	serverTLS *auth.ServerTLS // nil without a certificate
	listenTLS *tls.Config
	brokerTLS *tls.Config // nil: brokers are plaintext
	self      *auth.ClientAuth
	forward   bool
	withTLS   bool // tlsEnabledWithBroker
}

func newSecurity(cfg config.ProxyConfig, log *slog.Logger) (*security, error) {
	sec := &security{forward: cfg.ForwardAuthorizationCredentials, withTLS: cfg.TLSEnabledWithBroker || cfg.Client.TLSEnabled}
	var err error
	if sec.authn, err = auth.NewService(cfg.Authn, auth.ServiceOptions{Logger: log}); err != nil {
		return nil, err
	}
	if cfg.TLS.Configured() {
		if sec.serverTLS, err = auth.NewServerTLS(cfg.TLS, log); err != nil {
			return nil, err
		}
		sec.listenTLS = sec.serverTLS.Config()
	}
	if sec.self, err = auth.ParseClientAuth(cfg.Client.AuthenticationPlugin, cfg.Client.AuthenticationParameters); err != nil {
		return nil, err
	}
	cert, key := cfg.Client.CertificateFilePath, cfg.Client.KeyFilePath
	if cert == "" {
		cert, key = sec.self.CertFile, sec.self.KeyFile
	}
	if sec.withTLS || cert != "" {
		if sec.brokerTLS, err = auth.NewClientTLS(auth.ClientTLSOptions{TrustCertsFile: cfg.Client.TrustCertsFilePath,
			CertFile: cert, KeyFile: key, VerifyHostname: cfg.Client.HostnameVerification, Refresh: cfg.TLS.CertRefresh(), Logger: log}); err != nil {
			return nil, err
		}
	}
	return sec, nil
}

// dial connects to a broker, with TLS when useTLS (the handshake completes within the
// deadline of ctx before anything is written).
func (s *security) dial(ctx context.Context, d *net.Dialer, addr string, useTLS bool) (net.Conn, error) {
	nc, err := d.DialContext(ctx, "tcp", addr)
	if err != nil || !useTLS {
		return nc, err
	}
	if s.brokerTLS == nil {
		_ = nc.Close()
		return nil, fmt.Errorf("%s is a TLS listener but the proxy has no broker TLS configuration (tlsEnabledWithBroker, brokerClientTrustCertsFilePath)", addr)
	}
	tc, err := auth.ClientHandshake(ctx, nc, s.brokerTLS, addr)
	if err != nil {
		return nil, err // not a nil *tls.Conn in a non-nil net.Conn
	}
	return tc, nil
}

// upstreamConnect is the CONNECT the proxy sends a broker for a client (se nil: the proxy's
// own connection, or authentication off).
func (s *security) upstreamConnect(ctx context.Context, se *auth.Session, client *pb.CommandConnect) (*pb.CommandConnect, error) {
	if se != nil && !s.speaksForClients() {
		// No credentials of its own: the client's go through and the broker checks them.
		c := proto.Clone(client).(*pb.CommandConnect)
		c.ProxyToBrokerUrl = nil
		return c, nil
	}
	c := &pb.CommandConnect{ClientVersion: proto.String(clientVersion), ProtocolVersion: proto.Int32(protocolVersion)}
	if client != nil {
		c.ClientVersion, c.ProtocolVersion, c.FeatureFlags = client.ClientVersion, client.ProtocolVersion, client.FeatureFlags
	}
	switch {
	case s.self.Method != "" && s.self.Method != auth.MethodTLS:
		data, err := s.self.Data(ctx)
		if err != nil {
			return nil, fmt.Errorf("proxy credentials: %w", err)
		}
		c.AuthMethodName, c.AuthData = proto.String(s.self.Method), data
	case s.speaksForClients():
		c.AuthMethodName = proto.String(auth.MethodTLS) // its certificate, on the TLS connection
	}
	if se != nil {
		c.OriginalPrincipal = proto.String(se.Principal().Role)
		if s.forward && client != nil {
			c.OriginalAuthMethod = proto.String(client.GetAuthMethodName())
			c.OriginalAuthData = proto.String(string(client.GetAuthData()))
		}
	}
	return c, nil
}

// authenticate checks a client's CONNECT (nil session: authentication off).
func (s *security) authenticate(ctx context.Context, nc net.Conn, cmd *pb.CommandConnect) (*auth.Session, error) {
	if !s.authn.Enabled() {
		return nil, nil
	}
	var certs = s.peerCertificates(nc)
	return s.authn.Connect(ctx, auth.Connect{Method: cmd.GetAuthMethodName(), Data: cmd.GetAuthData(), PeerCertificates: certs,
		Remote: nc.RemoteAddr().String(), SupportsRefresh: cmd.GetFeatureFlags().GetSupportsAuthRefresh(),
		OriginalPrincipal: cmd.GetOriginalPrincipal(), OriginalAuthMethod: cmd.GetOriginalAuthMethod(), OriginalAuthData: []byte(cmd.GetOriginalAuthData())})
}

func (s *security) peerCertificates(nc net.Conn) []*x509.Certificate {
	tc, ok := nc.(*tls.Conn)
	if !ok || s.serverTLS == nil {
		return nil
	}
	cs := tc.ConnectionState()
	return s.serverTLS.PeerCertificates(&cs)
}

// untilExpiry is how long the session's credentials hold (0: they do not expire).
func untilExpiry(se *auth.Session) time.Duration {
	if se == nil {
		return 0
	}
	exp := se.Identity().Expires
	if exp.IsZero() {
		return 0
	}
	return max(time.Until(exp), time.Millisecond)
}

// upstreamDialer dials brokers for lookups: the proxy's shared pool (se nil) or a
// client's own (se set, so every lookup names the client).
func (p *Proxy) upstreamDialer(se *auth.Session, client *pb.CommandConnect) dialFunc {
	return func(ctx context.Context, addr string) (net.Conn, *pb.CommandConnect, error) {
		target, useTLS := p.brokers.binaryTarget(addr, p.sec.withTLS)
		var d net.Dialer
		nc, err := p.sec.dial(ctx, &d, target, useTLS)
		if err != nil {
			return nil, nil, err
		}
		connect, err := p.sec.upstreamConnect(ctx, se, client)
		if err != nil {
			_ = nc.Close()
			return nil, nil, err
		}
		return nc, connect, nil
	}
}

// speaksForClients says whether the proxy has credentials of its own to present to brokers
// on behalf of authenticated clients (an auth plugin, or a client certificate).
func (s *security) speaksForClients() bool {
	return s.self.Method != "" || (s.brokerTLS != nil && s.brokerTLS.GetClientCertificate != nil)
}
