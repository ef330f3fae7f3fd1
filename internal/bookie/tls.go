package bookie

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"time"

	"github.com/magnetar-io/magnetar/internal/auth"
	"github.com/magnetar-io/magnetar/internal/config"
)

// Bookie TLS (BookKeeper's tlsProviderFactoryClass, tlsClientAuthentication,
// authorizedRoles): when enabled the bookie speaks only TLS, and with client
// authentication every connection must present a certificate from tlsTrustStore, whose
// common name must be in authorizedRoles when that is set. The check runs once, right
// after the handshake and before the first request is read, so adds, reads and deletes
// come only from authenticated clients (brokers, auditors).

// handshakeTimeout bounds a client's TLS handshake.
const handshakeTimeout = 10 * time.Second

// serverTLS is the bookie's TLS side (nil: plaintext).
type serverTLS struct {
	st    *auth.ServerTLS
	conf  *tls.Config // st.Config(): picks up reloaded files per handshake
	roles []string
}

func newServerTLS(cfg config.BookieTLSConfig, s *Server) (*serverTLS, error) {
	if !cfg.Enabled() {
		return nil, nil
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	st, err := auth.NewServerTLSFiles(cfg.CertificatePath, cfg.KeyStore, cfg.TrustStore, cfg.ClientAuthentication,
		time.Duration(cfg.CertFilesRefreshDurationSeconds)*time.Second, s.log)
	if err != nil {
		return nil, fmt.Errorf("bookie TLS: %w", err)
	}
	return &serverTLS{st: st, conf: st.Config(), roles: cfg.AuthorizedRoles}, nil
}

// handshake completes the TLS handshake of c and checks its client's role. An error means
// the connection must close; the reason has been logged once.
func (c *serverConn) handshake() error {
	tc, ok := c.nc.(*tls.Conn)
	if !ok {
		return nil
	}
	ctx, cancel := context.WithTimeout(c.ctx, handshakeTimeout)
	defer cancel()
	if err := tc.HandshakeContext(ctx); err != nil {
		level := slog.LevelWarn
		if errors.Is(err, io.EOF) {
			level = slog.LevelDebug // a TCP probe, or a client that gave up
		}
		c.log.Log(ctx, level, "TLS handshake failed; closing the connection", "err", err)
		return err
	}
	t := c.s.tls
	if len(t.roles) == 0 {
		return nil
	}
	cs := tc.ConnectionState()
	chain := t.st.PeerCertificates(&cs)
	role := ""
	if chain != nil {
		role = chain[0].Subject.CommonName
	}
	if !slices.Contains(t.roles, role) {
		c.log.Warn("denied", "role", role, "action", "connect", "resource", "bookie", "why", "not in authorizedRoles")
		return fmt.Errorf("%w: role %q is not in authorizedRoles", auth.ErrAuthorization, role)
	}
	return nil
}
