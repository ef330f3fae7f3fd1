package standalone_test

import (
	"bufio"
	"encoding/base64"
	"errors"
	"io"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/magnetar-io/magnetar/internal/config"
	"github.com/magnetar-io/magnetar/internal/wire"
	"github.com/magnetar-io/magnetar/internal/wire/pb"
)

// rawConn is a client speaking frames over a plain socket, to see exactly what the broker
// sends and when it closes.
type rawConn struct {
	t  *testing.T
	nc net.Conn
	r  *wire.Reader
}

func dialRaw(t *testing.T, addr string) *rawConn {
	t.Helper()
	nc, err := net.DialTimeout("tcp", addr, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	return &rawConn{t: t, nc: nc, r: wire.NewReader(bufio.NewReader(nc), 1<<20)}
}

func (c *rawConn) send(cmd *pb.BaseCommand) {
	c.t.Helper()
	b, err := wire.AppendCommand(nil, cmd)
	if err != nil {
		c.t.Fatal(err)
	}
	if _, err := c.nc.Write(b); err != nil {
		c.t.Fatal(err)
	}
}

// next reads the next frame that is not a PING (answered), within a generous deadline
// that only catches hangs; io.EOF means the broker closed the connection.
func (c *rawConn) next() (*pb.BaseCommand, error) {
	_ = c.nc.SetReadDeadline(time.Now().Add(60 * time.Second))
	for {
		f, err := c.r.ReadFrame()
		if err != nil {
			return nil, err
		}
		if f.Cmd.GetType() == pb.BaseCommand_PING {
			c.send(&pb.BaseCommand{Type: pb.BaseCommand_PONG.Enum(), Pong: &pb.CommandPong{}})
			continue
		}
		return f.Cmd, nil
	}
}

func (c *rawConn) connect(method string, data []byte, refresh bool, mod func(*pb.CommandConnect)) *pb.BaseCommand {
	c.t.Helper()
	cc := &pb.CommandConnect{ClientVersion: proto.String("raw-test"), ProtocolVersion: proto.Int32(20),
		AuthMethodName: proto.String(method), AuthData: data,
		FeatureFlags: &pb.FeatureFlags{SupportsAuthRefresh: proto.Bool(refresh)}}
	if mod != nil {
		mod(cc)
	}
	c.send(&pb.BaseCommand{Type: pb.BaseCommand_CONNECT.Enum(), Connect: cc})
	cmd, err := c.next()
	if err != nil {
		c.t.Fatalf("no answer to CONNECT: %v", err)
	}
	return cmd
}

// closed asserts the broker closes the connection (the next read ends), skipping nothing
// but an ERROR it may send first.
func (c *rawConn) closed(why string) {
	c.t.Helper()
	for {
		cmd, err := c.next()
		if errors.Is(err, io.EOF) || (err != nil && !errors.Is(err, os.ErrDeadlineExceeded)) {
			return
		}
		if err != nil {
			c.t.Fatalf("%s: the broker did not close the connection: %v", why, err)
		}
		if cmd.GetType() != pb.BaseCommand_ERROR {
			c.t.Fatalf("%s: got %s instead of the connection closing", why, cmd.GetType())
		}
	}
}

// TestExpiredTokenIsChallengedThenClosed: a connection whose token expires gets an
// AUTH_CHALLENGE; without a valid AUTH_RESPONSE it is closed, with one it lives on until
// its new token expires in turn. A client that cannot refresh is closed at expiry.
func TestExpiredTokenIsChallengedThenClosed(t *testing.T) {
	f := startSecure(t, func(c *config.StandaloneConfig) { c.Broker.Security.Authn.RefreshCheckSeconds = 1 })
	addr := f.s.BrokerAddr()
	challenged := func(t *testing.T, c *rawConn) *pb.CommandAuthChallenge {
		t.Helper()
		cmd, err := c.next()
		if err != nil || cmd.GetType() != pb.BaseCommand_AUTH_CHALLENGE {
			t.Fatalf("want AUTH_CHALLENGE, got %v %v", cmd.GetType(), err)
		}
		return cmd.GetAuthChallenge()
	}
	// The three cases wait for tokens to expire, each on its own connection: in parallel.
	t.Run("unanswered challenge closes", func(t *testing.T) {
		t.Parallel()
		c := dialRaw(t, addr)
		if cmd := c.connect("token", []byte(f.token(t, "token-principal", 2*time.Second)), true, nil); cmd.GetType() != pb.BaseCommand_CONNECTED {
			t.Fatalf("CONNECT: %v", cmd)
		}
		ch := challenged(t, c)
		if ch.GetChallenge().GetAuthMethodName() != "token" || string(ch.GetChallenge().GetAuthData()) != "PulsarAuthRefresh" {
			t.Fatalf("challenge %v", ch)
		}
		c.closed("unanswered challenge")
	})
	t.Run("valid answer keeps, forged answer closes", func(t *testing.T) {
		t.Parallel()
		c := dialRaw(t, addr)
		c.connect("token", []byte(f.token(t, "token-principal", 2*time.Second)), true, nil)
		challenged(t, c)
		c.send(&pb.BaseCommand{Type: pb.BaseCommand_AUTH_RESPONSE.Enum(), AuthResponse: &pb.CommandAuthResponse{
			Response: &pb.AuthData{AuthMethodName: proto.String("token"), AuthData: []byte(f.token(t, "token-principal", 3*time.Second))}}})
		challenged(t, c) // it lived until the refreshed token expired too
		c.send(&pb.BaseCommand{Type: pb.BaseCommand_AUTH_RESPONSE.Enum(), AuthResponse: &pb.CommandAuthResponse{
			Response: &pb.AuthData{AuthMethodName: proto.String("token"), AuthData: []byte(f.token(t, "admin", time.Hour))}}})
		// Refused: the connection closes (after an ERROR, unless the next check came first);
		// accepted, it would live on for the new token's hour and closed would time out.
		c.closed("refresh as another role")
	})
	t.Run("no refresh support closes at expiry", func(t *testing.T) {
		t.Parallel()
		c := dialRaw(t, addr)
		c.connect("token", []byte(f.token(t, "token-principal", 2*time.Second)), false, nil)
		if cmd, err := c.next(); err == nil {
			t.Fatalf("client without refresh support got %s", cmd.GetType())
		}
	})
}

// TestBadCredentialsOnConnect: every kind of bad credential gets ERROR AuthenticationError
// and the connection closes; nothing else on the broker is disturbed.
func TestBadCredentialsOnConnect(t *testing.T) {
	f := startSecure(t, nil)
	b64 := func(s string) string { return base64.RawURLEncoding.EncodeToString([]byte(s)) }
	good := f.token(t, "token-principal", time.Hour)
	parts := strings.Split(good, ".")
	other, _ := (&secure{secret: []byte("another-secret-another-secret-32")}).tokenNoT("admin")
	for _, c := range []struct {
		name, method string
		data         []byte
		mod          func(*pb.CommandConnect)
	}{
		{"expired token", "token", []byte(f.token(t, "admin", time.Nanosecond)), nil},
		{"alg none", "token", []byte(b64(`{"alg":"none"}`) + "." + b64(`{"sub":"admin"}`) + "."), nil},
		{"tampered claims", "token", []byte(parts[0] + "." + b64(`{"sub":"admin"}`) + "." + parts[2]), nil},
		{"signed with another key", "token", []byte(other), nil},
		{"garbage token", "token", []byte("\x00\xff garbage"), nil},
		{"unknown auth method", "kerberos", []byte("ticket"), nil},
		{"basic wrong password", "basic", []byte("admin:nope"), nil},
		{"tls without certificate", "tls", nil, nil},
		{"non-proxy forwarding a principal", "token", []byte(good), func(cc *pb.CommandConnect) { cc.OriginalPrincipal = proto.String("admin") }},
	} {
		t.Run(c.name, func(t *testing.T) {
			rc := dialRaw(t, f.s.BrokerAddr())
			cmd := rc.connect(c.method, c.data, true, c.mod)
			if cmd.GetType() != pb.BaseCommand_ERROR || cmd.GetError().GetError() != pb.ServerError_AuthenticationError ||
				cmd.GetError().GetRequestId() != wire.NoRequestID {
				t.Fatalf("want ERROR AuthenticationError (request id -1), got %v", cmd)
			}
			rc.closed(c.name)
		})
	}
	// The broker still serves a good client afterwards.
	rc := dialRaw(t, f.s.BrokerAddr())
	if cmd := rc.connect("token", []byte(good), true, nil); cmd.GetType() != pb.BaseCommand_CONNECTED {
		t.Fatalf("good client after the bad ones: %v", cmd)
	}
}
