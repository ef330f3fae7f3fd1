package auth

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/magnetar-io/magnetar/internal/config"
)

// TLS for every role. Servers (broker 6651/8443, proxy, bookie, metadata) and clients
// (broker to bookies and brokers, proxy to brokers, every role to etcd, the CLI) build their
// tls.Config here, so certificate reload, protocol and cipher choice and peer verification
// are written once.
//
// Reload: the certificate, key and CA files are checked for changes (size and modification
// time) at most once per refresh interval, on the next handshake after it; a change is
// loaded for new handshakes, existing connections keep theirs. A file that fails to load
// keeps the previous material in use and is logged.

// material is the certificate and trust pool currently in use, reloaded from files.
type material struct {
	certFile, keyFile, caFile string
	refresh                   time.Duration
	log                       *slog.Logger

	mu      sync.Mutex
	checked time.Time
	stamps  [3]fileStamp
	cert    *tls.Certificate
	pool    *x509.CertPool
	version int // bumped on every successful reload
}

type fileStamp struct {
	size int64
	mod  time.Time
}

func stamp(path string) fileStamp {
	if path == "" {
		return fileStamp{}
	}
	st, err := os.Stat(path)
	if err != nil {
		return fileStamp{size: -1}
	}
	return fileStamp{size: st.Size(), mod: st.ModTime()}
}

func newMaterial(certFile, keyFile, caFile string, refresh time.Duration, log *slog.Logger) (*material, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	m := &material{certFile: certFile, keyFile: keyFile, caFile: caFile, refresh: refresh, log: log}
	if err := m.load(); err != nil {
		return nil, err
	}
	m.checked = time.Now()
	return m, nil
}

func (m *material) load() error {
	stamps := [3]fileStamp{stamp(m.certFile), stamp(m.keyFile), stamp(m.caFile)}
	var cert *tls.Certificate
	if m.certFile != "" {
		c, err := tls.LoadX509KeyPair(m.certFile, m.keyFile)
		if err != nil {
			return fmt.Errorf("certificate %s / key %s: %w", m.certFile, m.keyFile, err)
		}
		cert = &c
	}
	var pool *x509.CertPool
	if m.caFile != "" {
		p, err := loadCertPool(m.caFile)
		if err != nil {
			return fmt.Errorf("trusted certificates: %w", err)
		}
		pool = p
	}
	m.cert, m.pool, m.stamps = cert, pool, stamps
	m.version++
	return nil
}

// current returns the material, reloading it first if the files changed and the refresh
// interval has passed since the last look.
func (m *material) current() (*tls.Certificate, *x509.CertPool, int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.refresh > 0 && time.Since(m.checked) >= m.refresh {
		m.checked = time.Now()
		now := [3]fileStamp{stamp(m.certFile), stamp(m.keyFile), stamp(m.caFile)}
		if now != m.stamps {
			old := m.version
			if err := m.load(); err != nil {
				m.stamps = now // do not retry a broken file on every handshake
				m.log.Error("TLS files changed but cannot be loaded; keeping the previous ones", "err", err)
			} else if m.version != old {
				m.log.Info("TLS certificates reloaded", "cert", m.certFile, "trust", m.caFile)
			}
		}
	}
	return m.cert, m.pool, m.version
}

// ServerTLS is a listener's TLS configuration with reload.
type ServerTLS struct {
	m        *material
	base     *tls.Config
	insecure bool

	mu      sync.Mutex
	built   *tls.Config
	version int
}

// NewServerTLS loads cfg's files and returns the listener's TLS configuration. The client
// certificate policy follows Pulsar: tlsRequireTrustedClientCertOnConnect refuses
// handshakes without a trusted certificate; otherwise a certificate is verified if given
// (and the handshake fails if it does not chain to tlsTrustCertsFilePath), unless
// tlsAllowInsecureConnection, which lets any certificate through but never uses an
// unverified one to authenticate.
func NewServerTLS(cfg config.TLSServerConfig, log *slog.Logger) (*ServerTLS, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadConfig, err)
	}
	if !cfg.Configured() {
		return nil, fmt.Errorf("%w: tlsCertificateFilePath and tlsKeyFilePath are required for a TLS listener", ErrBadConfig)
	}
	base, err := baseConfig(cfg.Protocols, cfg.Ciphers)
	if err != nil {
		return nil, err
	}
	m, err := newMaterial(cfg.CertificateFilePath, cfg.KeyFilePath, cfg.TrustCertsFilePath, cfg.CertRefresh(), log)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadConfig, err)
	}
	switch {
	case cfg.RequireTrustedClientCert:
		base.ClientAuth = tls.RequireAndVerifyClientCert
	case cfg.AllowInsecureConnection:
		base.ClientAuth = tls.RequestClientCert
	case cfg.TrustCertsFilePath != "":
		base.ClientAuth = tls.VerifyClientCertIfGiven
	}
	return &ServerTLS{m: m, base: base, insecure: cfg.AllowInsecureConnection && !cfg.RequireTrustedClientCert}, nil
}

// NewServerTLSFiles is NewServerTLS for roles whose keys are not Pulsar's broker keys
// (bookie, metadata member): requireClient demands a trusted client certificate.
func NewServerTLSFiles(certFile, keyFile, caFile string, requireClient bool, refresh time.Duration, log *slog.Logger) (*ServerTLS, error) {
	return NewServerTLS(config.TLSServerConfig{CertificateFilePath: certFile, KeyFilePath: keyFile, TrustCertsFilePath: caFile,
		RequireTrustedClientCert: requireClient, CertRefreshCheckDurationSec: int(refresh / time.Second)}, log)
}

// Config is the tls.Config to serve with; each handshake picks up reloaded files.
func (s *ServerTLS) Config() *tls.Config {
	c := s.base.Clone()
	c.GetConfigForClient = func(*tls.ClientHelloInfo) (*tls.Config, error) { return s.current(), nil }
	// Certificates must be non-empty for some callers that inspect the config.
	cert, _, _ := s.m.current()
	c.Certificates = []tls.Certificate{*cert}
	return c
}

func (s *ServerTLS) current() *tls.Config {
	cert, pool, v := s.m.current()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.built == nil || s.version != v {
		c := s.base.Clone()
		c.Certificates = []tls.Certificate{*cert}
		c.ClientCAs = pool
		s.built, s.version = c, v
	}
	return s.built
}

// PeerCertificates returns the client's certificate chain if it was verified against the
// trusted CAs (leaf first), else nil: only verified certificates authenticate.
func (s *ServerTLS) PeerCertificates(cs *tls.ConnectionState) []*x509.Certificate {
	if cs == nil || len(cs.PeerCertificates) == 0 {
		return nil
	}
	if len(cs.VerifiedChains) > 0 {
		return cs.VerifiedChains[0]
	}
	if !s.insecure {
		return nil
	}
	// tlsAllowInsecureConnection let an unverified certificate through the handshake; it
	// authenticates only if it verifies after all.
	_, pool, _ := s.m.current()
	if pool == nil {
		return nil
	}
	if chain, err := verifyChain(cs.PeerCertificates, pool, "", x509.ExtKeyUsageClientAuth); err == nil {
		return chain
	}
	return nil
}

// PeerCertificates returns the verified chain of a server-side TLS connection state, for
// listeners whose ServerTLS is not at hand (the handshake verified it, or nothing).
func PeerCertificates(cs *tls.ConnectionState) []*x509.Certificate {
	if cs == nil || len(cs.VerifiedChains) == 0 {
		return nil
	}
	return cs.VerifiedChains[0]
}

func verifyChain(certs []*x509.Certificate, pool *x509.CertPool, dnsName string, usage x509.ExtKeyUsage) ([]*x509.Certificate, error) {
	inter := x509.NewCertPool()
	for _, c := range certs[1:] {
		inter.AddCert(c)
	}
	chains, err := certs[0].Verify(x509.VerifyOptions{Roots: pool, Intermediates: inter, DNSName: dnsName,
		KeyUsages: []x509.ExtKeyUsage{usage}})
	if err != nil {
		return nil, err
	}
	return chains[0], nil
}

// baseConfig applies tlsProtocols and tlsCiphers.
func baseConfig(protocols, ciphers []string) (*tls.Config, error) {
	c := &tls.Config{MinVersion: tls.VersionTLS12}
	if len(protocols) > 0 {
		c.MinVersion, c.MaxVersion = tls.VersionTLS13, tls.VersionTLS12
		for _, p := range protocols {
			v, ok := config.TLSVersions[p]
			if !ok {
				return nil, fmt.Errorf("%w: tlsProtocols: %s is not TLSv1.2 or TLSv1.3", ErrBadConfig, p)
			}
			c.MinVersion, c.MaxVersion = min(c.MinVersion, v), max(c.MaxVersion, v)
		}
	}
	if len(ciphers) > 0 {
		byName := map[string]uint16{}
		for _, cs := range tls.CipherSuites() {
			byName[cs.Name] = cs.ID
		}
		for _, name := range ciphers {
			id, ok := byName[strings.TrimSpace(name)]
			if !ok {
				return nil, fmt.Errorf("%w: tlsCiphers: %s is not a secure TLS 1.2 cipher suite known here", ErrBadConfig, name)
			}
			c.CipherSuites = append(c.CipherSuites, id)
		}
	}
	return c, nil
}

// ClientTLSOptions configure a TLS client of one of our processes.
type ClientTLSOptions struct {
	// TrustCertsFile is the PEM CA bundle servers must chain to (empty: the system's).
	TrustCertsFile string
	// CertFile and KeyFile are the client certificate, presented when the server asks.
	CertFile, KeyFile string
	// Insecure skips all server verification (tlsAllowInsecureConnection on a client).
	Insecure bool
	// VerifyHostname checks that the server's certificate names the host dialed; without
	// it the chain is still verified.
	VerifyHostname bool
	// Refresh is how often the files are checked for changes (0: never).
	Refresh time.Duration
	Logger  *slog.Logger
}

// NewClientTLS builds a client tls.Config. The server's certificate chain is always
// verified against TrustCertsFile (or the system roots) unless Insecure is set; hostname
// verification is separate so deployments with IP-only certificates can keep chain checks.
// Credentials are sent only after the handshake verified the peer (CVE-2022-33681: the
// handshake completes before any protocol byte is written).
func NewClientTLS(o ClientTLSOptions) (*tls.Config, error) {
	if (o.CertFile == "") != (o.KeyFile == "") {
		return nil, fmt.Errorf("%w: a client certificate needs both its certificate and key file", ErrBadConfig)
	}
	m, err := newMaterial(o.CertFile, o.KeyFile, o.TrustCertsFile, o.Refresh, o.Logger)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadConfig, err)
	}
	c := &tls.Config{MinVersion: tls.VersionTLS12}
	if o.CertFile != "" {
		c.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
			cert, _, _ := m.current()
			return cert, nil
		}
	}
	if o.Insecure {
		c.InsecureSkipVerify = true
		return c, nil
	}
	// Verification is ours (so the trust file reloads): crypto/tls's is turned off and
	// VerifyConnection does the same checks against the current pool.
	c.InsecureSkipVerify = true
	verifyHost := o.VerifyHostname
	c.VerifyConnection = func(cs tls.ConnectionState) error {
		if len(cs.PeerCertificates) == 0 {
			return errors.New("tls: server sent no certificate")
		}
		_, pool, _ := m.current()
		if pool == nil {
			sys, err := x509.SystemCertPool()
			if err != nil {
				return fmt.Errorf("tls: no trusted certificates: %w", err)
			}
			pool = sys
		}
		name := ""
		if verifyHost {
			name = cs.ServerName
		}
		if _, err := verifyChain(cs.PeerCertificates, pool, name, x509.ExtKeyUsageServerAuth); err != nil {
			return fmt.Errorf("tls: server certificate: %w", err)
		}
		return nil
	}
	return c, nil
}

// ClientHandshake runs the client side of a TLS handshake on nc towards addr (host:port; its
// host is the name checked when c verifies host names), within ctx. On failure nc is closed.
func ClientHandshake(ctx context.Context, nc net.Conn, c *tls.Config, addr string) (*tls.Conn, error) {
	c = c.Clone()
	if host, _, err := net.SplitHostPort(addr); err == nil {
		c.ServerName = host
	}
	tc := tls.Client(nc, c)
	if err := tc.HandshakeContext(ctx); err != nil {
		_ = nc.Close()
		return nil, fmt.Errorf("TLS handshake with %s: %w", addr, err)
	}
	return tc, nil
}
