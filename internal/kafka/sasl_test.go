package kafka

import (
	"context"
	"encoding/base64"
	"errors"
	"net"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/oauth"
	"github.com/twmb/franz-go/pkg/sasl/plain"

	"github.com/magnetar-io/magnetar/internal/auth"
	"github.com/magnetar-io/magnetar/internal/config"
)

type staticPolicies struct{ ns auth.NamespacePolicy }

func (p staticPolicies) Tenant(context.Context, string) (auth.TenantPolicy, error) {
	return auth.TenantPolicy{}, nil
}
func (p staticPolicies) Namespace(context.Context, string, string) (auth.NamespacePolicy, error) {
	return p.ns, nil
}

// startSecureMem runs a server on the memory backend with token authentication and
// authorization on ("admin" is the superuser; grants are namespace grants by role) and
// returns its address and a token maker.
func startSecureMem(t *testing.T, grants map[string][]string, mutate ...func(*config.KafkaConfig)) (string, func(sub string) string) {
	t.Helper()
	svc, authz, token := newTestSecurity(t, grants)
	be := newMemBackend()
	cfg := config.DefaultKafkaConfig()
	cfg.Listeners = "PLAINTEXT://127.0.0.1:0"
	for _, m := range mutate {
		m(&cfg)
	}
	s, err := New(Options{Config: cfg, Backend: be, Auth: svc, Authorizer: authz})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Listen(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	ta := s.Addrs()[0].(*net.TCPAddr)
	be.host, be.port = "127.0.0.1", int32(ta.Port)
	return ta.String(), token
}

// newTestSecurity is token authentication and authorization with superuser "admin" and
// grants on the namespace; token makes a role's token.
func newTestSecurity(t *testing.T, grants map[string][]string) (*auth.Service, *auth.Authorizer, func(sub string) string) {
	t.Helper()
	secret, err := auth.NewSecretKey("HS256")
	if err != nil {
		t.Fatal(err)
	}
	acfg := config.DefaultAuthenticationConfig()
	acfg.Enabled, acfg.Providers = true, []string{"token"}
	acfg.Token.SecretKey = "data:;base64," + base64.StdEncoding.EncodeToString(secret)
	svc, err := auth.NewService(acfg, auth.ServiceOptions{})
	if err != nil {
		t.Fatal(err)
	}
	zcfg := config.DefaultAuthorizationConfig()
	zcfg.Enabled, zcfg.SuperUserRoles = true, []string{"admin"}
	authz, err := auth.NewAuthorizer(zcfg, staticPolicies{ns: auth.NamespacePolicy{NamespaceAuth: grants}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	token := func(sub string) string {
		tok, err := auth.CreateToken(secret, "", auth.TokenSpec{Subject: sub})
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}
	return svc, authz, token
}

// TestSASLAndAuthorization: PLAIN with a Pulsar token and OAUTHBEARER authenticate through
// internal/auth's token provider; a client without SASL is refused; a forged token fails;
// a role allowed only to produce cannot fetch.
func TestSASLAndAuthorization(t *testing.T) {
	addr, token := startSecureMem(t, map[string][]string{"writer": {auth.ActionProduce}})
	ctx := testCtx(t)

	// No SASL: the connection is closed at the first request past ApiVersions.
	anon := newClient(t, addr, kgo.RequestRetries(0), kgo.RetryTimeout(time.Second))
	if _, err := kadmMetadata(ctx, anon); err == nil {
		t.Fatal("a client without SASL got metadata")
	}
	// A forged token fails authentication.
	bad := newClient(t, addr, kgo.SASL(plain.Auth{User: "x", Pass: "token:" + token("admin") + "x"}.AsMechanism()),
		kgo.RequestRetries(0))
	if _, err := kadmMetadata(ctx, bad); !errors.Is(err, kerr.SaslAuthenticationFailed) {
		t.Fatalf("forged token: %v", err)
	}
	// The superuser, over PLAIN with a Pulsar token: produce and consume.
	adm := newClient(t, addr, kgo.SASL(plain.Auth{User: "public/default", Pass: "token:" + token("admin")}.AsMechanism()),
		kgo.AllowAutoTopicCreation(), kgo.ConsumeTopics("sec"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err := adm.ProduceSync(ctx, &kgo.Record{Topic: "sec", Value: []byte("hello")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	fs := adm.PollFetches(ctx)
	if err := fs.Err0(); err != nil || len(fs.Records()) != 1 {
		t.Fatalf("superuser fetch: %v, %d records", err, len(fs.Records()))
	}
	// A writer, over OAUTHBEARER: may produce, may not fetch.
	wr := newClient(t, addr, kgo.SASL(oauth.Auth{Token: token("writer")}.AsMechanism()),
		kgo.ConsumeTopics("sec"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err := wr.ProduceSync(ctx, &kgo.Record{Topic: "sec", Value: []byte("w")}).FirstErr(); err != nil {
		t.Fatalf("writer produce: %v", err)
	}
	fs = wr.PollFetches(ctx)
	var ferr error
	fs.EachError(func(_ string, _ int32, err error) { ferr = err })
	if !errors.Is(ferr, kerr.TopicAuthorizationFailed) {
		t.Fatalf("writer fetch: %v", ferr)
	}
}

func kadmMetadata(ctx context.Context, cl *kgo.Client) (any, error) {
	req := kmsg.NewPtrMetadataRequest()
	return req.RequestWith(ctx, cl)
}
