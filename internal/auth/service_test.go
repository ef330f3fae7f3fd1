package auth

import (
	"context"
	"crypto/x509"
	"encoding/base64"
	"errors"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/magnetar-io/magnetar/internal/config"
)

const htpasswd = "# users\nadmin:$apr1$FG4AO6aX$KGYPuMoLUou3i6vUkPUUf.\nold:ab01FAX.bQRSU\n"

func fullService(t *testing.T, anonymous string, now func() time.Time) *Service {
	t.Helper()
	conf := writeFile(t, ".htpasswd", []byte(htpasswd))
	return tokenService(t, func(c *config.AuthenticationConfig) {
		c.Providers = []string{
			"org.apache.pulsar.broker.authentication.AuthenticationProviderTls",
			"org.apache.pulsar.broker.authentication.AuthenticationProviderToken",
			"org.apache.pulsar.broker.authentication.AuthenticationProviderBasic",
		}
		c.Basic.Conf = conf
		c.AnonymousUserRole = anonymous
	}, now)
}

func TestServiceBinary(t *testing.T) {
	s := fullService(t, "anonymous", nil)
	ctx := context.Background()
	tok := mustToken(t, testSecret, "", TokenSpec{Subject: "alice"})
	cert := &x509.Certificate{}
	cert.Subject.CommonName = "admin"
	for _, c := range []struct {
		name string
		cred Credentials
		role string
		ok   bool
	}{
		{"token", Credentials{Method: "token", Data: []byte(tok)}, "alice", true},
		{"basic apr1", Credentials{Method: "basic", Data: []byte("admin:123456")}, "admin", true},
		{"basic des", Credentials{Method: "basic", Data: []byte("old:123456")}, "old", true},
		{"basic wrong", Credentials{Method: "basic", Data: []byte("admin:1234567")}, "", false},
		{"basic unknown user", Credentials{Method: "basic", Data: []byte("eve:123456")}, "", false},
		{"basic no colon", Credentials{Method: "basic", Data: []byte("admin")}, "", false},
		{"tls", Credentials{Method: "tls", PeerCertificates: []*x509.Certificate{cert}}, "admin", true},
		{"tls without cert", Credentials{Method: "tls"}, "", false},
		{"no method", Credentials{}, "anonymous", true},
		{"none", Credentials{Method: "none"}, "anonymous", true},
		{"unknown method", Credentials{Method: "kerberos", Data: []byte("x")}, "", false},
		{"bad token", Credentials{Method: "token", Data: []byte("x.y.z")}, "", false},
	} {
		id, err := s.Authenticate(ctx, c.cred)
		if c.ok != (err == nil) || id.Role != c.role {
			t.Errorf("%s: got %+v, %v", c.name, id, err)
		}
		if err != nil && !errors.Is(err, ErrAuthentication) {
			t.Errorf("%s: error %v is not ErrAuthentication", c.name, err)
		}
	}
	if _, err := s.Authenticate(ctx, Credentials{Method: "kerberos"}); err == nil || !strings.Contains(err.Error(), "tls, token, basic") {
		t.Errorf("unknown method error should list the methods: %v", err)
	}
	noAnon := fullService(t, "", nil)
	if _, err := noAnon.Authenticate(ctx, Credentials{}); !errors.Is(err, ErrAuthentication) {
		t.Errorf("no anonymous role: %v", err)
	}
}

func TestServiceHTTP(t *testing.T) {
	s := fullService(t, "anonymous", nil)
	tok := mustToken(t, testSecret, "", TokenSpec{Subject: "alice"})
	basic := func(up string) string { return "Basic " + base64.StdEncoding.EncodeToString([]byte(up)) }
	for _, c := range []struct {
		name, auth, method, role string
		ok                       bool
	}{
		{"bearer", "Bearer " + tok, "", "alice", true},
		{"bearer lower", "bearer " + tok, "", "alice", true},
		{"basic", basic("admin:123456"), "", "admin", true},
		{"basic wrong is refused, not anonymous", basic("admin:nope"), "", "", false},
		{"bad bearer is refused, not anonymous", "Bearer x.y.z", "", "", false},
		{"unknown scheme", "Digest abc", "", "", false},
		{"nothing", "", "", "anonymous", true},
		{"explicit method", "Bearer " + tok, "token", "alice", true},
		{"explicit unknown method", "Bearer " + tok, "sasl", "", false},
		{"basic not base64", "Basic ***", "", "", false},
	} {
		r := httptest.NewRequest("GET", "/admin/v2/tenants", nil)
		if c.auth != "" {
			r.Header.Set("Authorization", c.auth)
		}
		if c.method != "" {
			r.Header.Set("X-Pulsar-Auth-Method-Name", c.method)
		}
		id, err := s.AuthenticateHTTP(r)
		if c.ok != (err == nil) || id.Role != c.role {
			t.Errorf("%s: got %+v, %v", c.name, id, err)
		}
	}
}

func TestServiceConfigErrors(t *testing.T) {
	for name, mod := range map[string]func(*config.AuthenticationConfig){
		"unknown provider": func(c *config.AuthenticationConfig) { c.Providers = []string{"com.example.Mine"} },
		"no providers":     func(c *config.AuthenticationConfig) { c.Providers = nil },
		"token no key":     func(c *config.AuthenticationConfig) { c.Token.SecretKey = "" },
		"basic no conf":    func(c *config.AuthenticationConfig) { c.Providers = []string{"basic"} },
		"basic bad file":   func(c *config.AuthenticationConfig) { c.Providers, c.Basic.Conf = []string{"basic"}, "data:,admin" },
		"openid no issuer": func(c *config.AuthenticationConfig) { c.Providers = []string{"openid"} },
		"openid http": func(c *config.AuthenticationConfig) {
			c.Providers, c.OpenID.AllowedTokenIssuers, c.OpenID.AllowedAudiences = []string{"openid"}, []string{"http://x"}, []string{"a"}
		},
		"both keys": func(c *config.AuthenticationConfig) { c.Token.PublicKey = "abc" },
	} {
		cfg := config.DefaultAuthenticationConfig()
		cfg.Enabled, cfg.Providers, cfg.Token.SecretKey = true, []string{"token"}, secretSetting()
		t.Setenv("PULSAR_EXTRA_OPTS", "")
		mod(&cfg)
		if _, err := NewService(cfg, ServiceOptions{}); !errors.Is(err, ErrBadConfig) {
			t.Errorf("%s: %v", name, err)
		}
	}
}

func TestBasicConfFromSystemProperty(t *testing.T) {
	path := writeFile(t, ".htpasswd", []byte(htpasswd))
	t.Setenv("PULSAR_EXTRA_OPTS", "-Xmx1g -Dpulsar.auth.basic.conf="+path)
	cfg := config.DefaultAuthenticationConfig()
	cfg.Enabled, cfg.Providers = true, []string{"org.apache.pulsar.broker.authentication.AuthenticationProviderBasic"}
	s, err := NewService(cfg, ServiceOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if id, err := s.Authenticate(context.Background(), Credentials{Method: "basic", Data: []byte("admin:123456")}); err != nil || id.Role != "admin" {
		t.Fatal(id, err)
	}
}

func TestServiceDisabled(t *testing.T) {
	s, err := NewService(config.DefaultAuthenticationConfig(), ServiceOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if s.Enabled() {
		t.Fatal("enabled by default")
	}
	if _, err := s.Authenticate(context.Background(), Credentials{Method: "whatever", Data: []byte("junk")}); err != nil {
		t.Fatal(err)
	}
}
