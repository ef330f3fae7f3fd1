package broker

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/magnetar-io/magnetar/internal/auth"
	"github.com/magnetar-io/magnetar/internal/topics"
	"github.com/magnetar-io/magnetar/internal/wire"
	"github.com/magnetar-io/magnetar/internal/wire/pb"
)

// Authentication on the binary protocol (internal/auth does the checking):
//
//   - CONNECT: auth_method_name/auth_data (and a proxy's original_principal/original_auth_*)
//     are checked before CONNECTED is sent; a failure answers ERROR AuthenticationError
//     (request id -1, as Pulsar) and closes. Authorization of every later command happens in
//     the topic service, for the principal the connection carries in its contexts
//     (opContext -> topics.WithPrincipal): decided once per producer, consumer or request.
//   - Refresh: every authenticationRefreshCheckSeconds the connection's Session is ticked;
//     expired credentials get an AUTH_CHALLENGE ("PulsarAuthRefresh"); the client's
//     AUTH_RESPONSE is checked (same role, not expired); no valid answer by the next tick, a
//     failed answer, or a client without supports_auth_refresh closes the connection.

// errAuthClosed marks the handler errors that closed the connection after an ERROR.
var errAuthClosed = errors.New("broker: authentication failed")

// peerCertificates is the client's verified TLS certificate chain (nil on plaintext or
// without a trusted certificate).
func (c *conn) peerCertificates() []*x509.Certificate {
	tc, ok := c.nc.(*tls.Conn)
	if !ok || c.s.tls == nil {
		return nil
	}
	cs := tc.ConnectionState()
	return c.s.tls.PeerCertificates(&cs)
}

// authenticate checks CONNECT's credentials and keeps the connection's session.
func (c *conn) authenticate(cmd *pb.CommandConnect) error {
	a := c.s.authn
	if !a.Enabled() {
		return nil
	}
	ctx, cancel := context.WithTimeout(c.ctx, opTimeout)
	defer cancel()
	se, err := a.Connect(ctx, auth.Connect{
		Method: cmd.GetAuthMethodName(), Data: cmd.GetAuthData(), PeerCertificates: c.peerCertificates(), Remote: c.remote,
		OriginalPrincipal: cmd.GetOriginalPrincipal(), OriginalAuthMethod: cmd.GetOriginalAuthMethod(),
		OriginalAuthData: []byte(cmd.GetOriginalAuthData()), SupportsRefresh: cmd.GetFeatureFlags().GetSupportsAuthRefresh(),
	})
	if err != nil {
		return err
	}
	c.sess.Store(se)
	return nil
}

// principal is who the connection's operations are authorized for.
func (c *conn) principal() auth.Principal {
	if se := c.sess.Load(); se != nil {
		return se.Principal()
	}
	return auth.Principal{}
}

// withPrincipal puts the connection's principal into ctx for the topic service.
func (c *conn) withPrincipal(ctx context.Context) context.Context {
	if c.sess.Load() == nil {
		return ctx
	}
	return topics.WithPrincipal(ctx, c.principal())
}

// refreshLoop ticks the session until the connection closes.
func (c *conn) refreshLoop(se *auth.Session, protoVersion int32) {
	t := time.NewTicker(c.s.authn.RefreshCheck())
	defer t.Stop()
	for {
		select {
		case <-c.closed:
			return
		case now := <-t.C:
			act, method, reason := se.Tick(now)
			switch act {
			case auth.RefreshChallenge:
				c.send(&pb.BaseCommand{Type: pb.BaseCommand_AUTH_CHALLENGE.Enum(), AuthChallenge: &pb.CommandAuthChallenge{
					ServerVersion:   proto.String(ServerVersion),
					ProtocolVersion: proto.Int32(protoVersion),
					Challenge:       &pb.AuthData{AuthMethodName: proto.String(method), AuthData: auth.RefreshData},
				}})
			case auth.RefreshClose:
				c.log.Info("closing connection: credentials expired", "role", se.Principal().String(), "reason", reason)
				c.close("authentication: " + reason)
				return
			}
		}
	}
}

// handleAuthResponse checks refreshed credentials.
func (c *conn) handleAuthResponse(cmd *pb.CommandAuthResponse) error {
	se := c.sess.Load()
	if se == nil {
		return nil // authentication is off: a stray answer is harmless
	}
	ctx, cancel := context.WithTimeout(c.ctx, opTimeout)
	defer cancel()
	r := cmd.GetResponse()
	if err := se.Respond(ctx, r.GetAuthMethodName(), r.GetAuthData()); err != nil {
		c.sendAuthError(err)
		return fmt.Errorf("%w: refresh: %w", errAuthClosed, err)
	}
	return nil
}

// sendAuthError answers an authentication failure with a connection-level ERROR and closes
// the connection once the write loop has written it (the read loop stops reading).
func (c *conn) sendAuthError(err error) {
	c.send(&pb.BaseCommand{Type: pb.BaseCommand_ERROR.Enum(), Error: &pb.CommandError{
		RequestId: proto.Uint64(wire.NoRequestID), Error: pb.ServerError_AuthenticationError.Enum(), Message: proto.String(err.Error())}})
	// Only now: a write loop that sees the flag before the ERROR is queued would close
	// without it. The poke makes it look again after writing.
	reason := "authentication failed"
	c.flushClose.Store(&reason)
	select {
	case c.wsig <- struct{}{}:
	default:
	}
}
