package kafka

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/magnetar-io/magnetar/internal/auth"
	"github.com/magnetar-io/magnetar/internal/resources"
)

// SASL (SaslHandshake v1, SaslAuthenticate v0-v2) on internal/auth's providers, and
// authorization of every request with its Authorizer.
//
// Mechanisms:
//
//	PLAIN        authzid NUL username NUL password. A password "token:<jwt>" (Kafka-on-
//	             Pulsar's convention) or one that looks like a JWT is a Pulsar token for
//	             the token (or openid) provider, the username ignored; any other password
//	             goes to the basic provider as username:password.
//	OAUTHBEARER  RFC 7628's initial response "n,,\x01auth=Bearer <token>\x01\x01": the
//	             bearer token for the token or openid provider.
//	SCRAM-SHA-256, SCRAM-SHA-512
//	             two round trips (scram.go) against the credentials kept in the metadata
//	             store (AlterUserScramCredentials, scram_admin.go); the principal is the
//	             user name.
//
// saslAllowedMechanisms chooses which are offered. With authenticationEnabled every
// request but ApiVersions, SaslHandshake and SaslAuthenticate is refused (the connection is
// closed, as Kafka does) until SASL has succeeded; without it PLAIN and OAUTHBEARER are
// accepted and ignored, as Pulsar ignores credentials it does not check. SCRAM is checked
// either way: the client verifies the server's signature, which needs the user's
// credential, so there is no way to accept it unchecked.

// saslOpen lists the APIs a connection may use before it authenticates.
var saslOpen = map[int16]bool{
	kmsg.ApiVersions.Int16():      true,
	kmsg.SASLHandshake.Int16():    true,
	kmsg.SASLAuthenticate.Int16(): true,
}

func handleSASLHandshake(c *conn, req kmsg.Request, reply func(kmsg.Response)) {
	r := req.(*kmsg.SASLHandshakeRequest)
	resp := r.ResponseKind().(*kmsg.SASLHandshakeResponse)
	resp.SupportedMechanisms = c.s.cfg.SASLAllowedMechanisms
	mech := strings.ToUpper(r.Mechanism)
	switch {
	case c.authenticated:
		resp.ErrorCode = kerr.IllegalSaslState.Code
	case !containsString(resp.SupportedMechanisms, mech):
		resp.ErrorCode = kerr.UnsupportedSaslMechanism.Code
	default:
		c.saslMech, c.scram = mech, nil
	}
	reply(resp)
}

func handleSASLAuthenticate(c *conn, req kmsg.Request, reply func(kmsg.Response)) {
	r := req.(*kmsg.SASLAuthenticateRequest)
	resp := r.ResponseKind().(*kmsg.SASLAuthenticateResponse)
	fail := func(err error) {
		resp.ErrorCode, resp.ErrorMessage = kerr.SaslAuthenticationFailed.Code, errorMessage(err)
		reply(resp)
	}
	if c.saslMech == "" || c.authenticated {
		resp.ErrorCode = kerr.IllegalSaslState.Code
		reply(resp)
		return
	}
	if m, ok := scramMechByName(c.saslMech); ok {
		if err := c.scramStep(m, r.SASLAuthBytes, resp); err != nil {
			fail(err)
		} else {
			reply(resp)
		}
		return
	}
	creds, err := saslCredentials(c.saslMech, r.SASLAuthBytes)
	if err != nil {
		fail(err)
		return
	}
	creds.Remote = c.nc.RemoteAddr().String()
	id := auth.Identity{Role: creds.user}
	if c.s.auth.Enabled() {
		ctx, cancel := context.WithTimeout(c.ctx, 30*time.Second)
		id, err = c.s.auth.Authenticate(ctx, creds.Credentials)
		cancel()
		if err != nil {
			c.log.Warn("kafka SASL authentication failed", "mechanism", c.saslMech, "err", err)
			fail(fmt.Errorf("authentication failed: %w", err))
			return
		}
	}
	c.authenticated, c.principal = true, auth.Principal{Role: id.Role}
	if !id.Expires.IsZero() && r.Version >= 1 {
		resp.SessionLifetimeMillis = max(time.Until(id.Expires).Milliseconds(), 1)
	}
	reply(resp)
}

// scramStep runs one round trip of a SCRAM exchange into resp. A failed exchange is over:
// the client must hand-shake again.
func (c *conn) scramStep(m scramMech, msg []byte, resp *kmsg.SASLAuthenticateResponse) error {
	if c.scram == nil {
		c.scram = newScramServer(m, func(user string) (resources.KafkaScramCredential, bool, error) {
			ctx, cancel := context.WithTimeout(c.ctx, 30*time.Second)
			defer cancel()
			creds, err := c.s.be.ScramUser(ctx, user)
			cred, ok := creds[m.name]
			return cred, ok, err
		})
	}
	out, done, err := c.scram.next(msg)
	if err != nil {
		c.log.Warn("kafka SASL authentication failed", "mechanism", m.name, "user", c.scram.user, "err", err)
		c.saslMech, c.scram = "", nil
		return fmt.Errorf("authentication failed: %w", err)
	}
	resp.SASLAuthBytes = out
	if done {
		c.authenticated, c.principal = true, auth.Principal{Role: c.scram.user}
		c.scram = nil
	}
	return nil
}

type saslCreds struct {
	auth.Credentials
	user string
}

func saslCredentials(mech string, b []byte) (saslCreds, error) {
	switch mech {
	case "PLAIN":
		parts := bytes.SplitN(b, []byte{0}, 3)
		if len(parts) != 3 {
			return saslCreds{}, fmt.Errorf("PLAIN: want authzid NUL user NUL password")
		}
		user, pass := string(parts[1]), string(parts[2])
		if tok, ok := strings.CutPrefix(pass, "token:"); ok {
			return saslCreds{Credentials: auth.Credentials{Method: auth.MethodToken, Data: []byte(tok)}, user: user}, nil
		}
		if strings.Count(pass, ".") == 2 && strings.HasPrefix(pass, "eyJ") {
			return saslCreds{Credentials: auth.Credentials{Method: auth.MethodToken, Data: []byte(pass)}, user: user}, nil
		}
		return saslCreds{Credentials: auth.Credentials{Method: auth.MethodBasic, Data: []byte(user + ":" + pass)}, user: user}, nil
	case "OAUTHBEARER":
		// gs2 header, then \x01-separated key=value pairs.
		for _, kv := range strings.Split(string(b), "\x01") {
			if v, ok := strings.CutPrefix(kv, "auth="); ok {
				scheme, tok, ok := strings.Cut(strings.TrimSpace(v), " ")
				if !ok || !strings.EqualFold(scheme, "Bearer") || tok == "" {
					return saslCreds{}, fmt.Errorf("OAUTHBEARER: want auth=Bearer <token>")
				}
				return saslCreds{Credentials: auth.Credentials{Method: auth.MethodToken, Data: []byte(tok)}, user: "oauth"}, nil
			}
		}
		return saslCreds{}, fmt.Errorf("OAUTHBEARER: no auth=Bearer <token> in the initial response")
	}
	return saslCreds{}, fmt.Errorf("mechanism %s is not offered", mech)
}

func containsString(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// authorize checks that the connection's principal may do op on the topic (sub names the
// group for consume operations). The error is Kafka's TOPIC_AUTHORIZATION_FAILED.
func (c *conn) authorize(ctx context.Context, ref TopicRef, op auth.TopicOp, sub string) error {
	if !c.s.authz.Enabled() {
		return nil
	}
	// Decisions are cached per connection for authzCacheTTL (the broker's
	// authorizationRecheckIntervalSeconds), so a produce request does not read namespace
	// policies each time and a revoked permission still takes effect in bounded time.
	k := authzKey{topic: ref.Full(), op: op, sub: sub}
	now := time.Now()
	c.authzMu.Lock()
	if d, ok := c.authzCache[k]; ok && now.Sub(d.at) < c.s.authzTTL {
		c.authzMu.Unlock()
		return d.err
	}
	c.authzMu.Unlock()
	t := auth.Topic{Tenant: ref.Tenant, Namespace: ref.Namespace, Name: ref.Full()}
	err := c.s.authz.Topic(ctx, c.principal, t, op, sub)
	if err != nil {
		err = fmt.Errorf("%w: %v", ErrTopicAuthorization, err)
	}
	c.authzMu.Lock()
	if c.authzCache == nil || len(c.authzCache) > 4096 {
		c.authzCache = map[authzKey]authzDecision{}
	}
	c.authzCache[k] = authzDecision{err: err, at: now}
	c.authzMu.Unlock()
	return err
}

type authzKey struct {
	topic string
	op    auth.TopicOp
	sub   string
}

type authzDecision struct {
	err error
	at  time.Time
}

// authorizeName is authorize for a Kafka topic name.
func (c *conn) authorizeName(ctx context.Context, topic string, op auth.TopicOp, sub string) error {
	if !c.s.authz.Enabled() {
		return nil
	}
	ref, err := c.s.namer.Resolve(topic)
	if err != nil {
		return err
	}
	return c.authorize(ctx, ref, op, sub)
}
