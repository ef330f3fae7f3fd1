package standalone_test

import (
	"context"
	"encoding/base64"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
	plog "github.com/apache/pulsar-client-go/pulsar/log"

	"github.com/magnetar-io/magnetar/internal/auth"
	"github.com/magnetar-io/magnetar/internal/config"
	"github.com/magnetar-io/magnetar/internal/standalone"
)

// secure is a standalone with TLS listeners, the tls, token and basic providers, an
// anonymous role and authorization, set up as pulsar-client-go's CI sets up Pulsar: tenant
// public administered by anonymous, public/default open to anonymous, tenant private and
// private/auth open to token-principal; "admin" is a superuser (its certificate's CN, a
// token subject and a basic user).
type secure struct {
	s                    *standalone.Standalone
	dir                  string
	ca, other            *auth.CA
	adminCert            auth.Issued
	strangerCert         auth.Issued
	secret               []byte
	adminToken, tpToken  string
	brokerURL, brokerTLS string
	httpURL, httpsURL    string
}

const testHtpasswd = "admin:$apr1$FG4AO6aX$KGYPuMoLUou3i6vUkPUUf.\n" // password 123456

func startSecure(t testing.TB, mod func(*config.StandaloneConfig)) *secure {
	t.Helper()
	dir := t.TempDir()
	f := &secure{dir: dir}
	var err error
	if f.ca, err = auth.NewCA(filepath.Join(dir, "ca"), "test CA", time.Hour); err != nil {
		t.Fatal(err)
	}
	if f.other, err = auth.NewCA(filepath.Join(dir, "other"), "other CA", time.Hour); err != nil {
		t.Fatal(err)
	}
	brokerCert, err := f.ca.Issue(auth.IssueOptions{Name: "broker", Hosts: []string{"localhost"}})
	if err != nil {
		t.Fatal(err)
	}
	if f.adminCert, err = f.ca.Issue(auth.IssueOptions{Name: "client", CommonName: "admin"}); err != nil {
		t.Fatal(err)
	}
	if f.strangerCert, err = f.other.Issue(auth.IssueOptions{Name: "stranger", CommonName: "admin"}); err != nil {
		t.Fatal(err)
	}
	if f.secret, err = auth.NewSecretKey("HS256"); err != nil {
		t.Fatal(err)
	}
	keyFile := filepath.Join(dir, "secret.key")
	htpasswd := filepath.Join(dir, ".htpasswd")
	for p, b := range map[string][]byte{keyFile: f.secret, htpasswd: []byte(testHtpasswd)} {
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	f.adminToken = f.token(t, "admin", 0)
	f.tpToken = f.token(t, "token-principal", 0)

	cfg := testConfig(filepath.Join(dir, "data"))
	sec := &cfg.Broker.Security
	sec.ServicePortTLS, sec.WebServicePortTLS = 0, 0
	sec.TLS.CertificateFilePath, sec.TLS.KeyFilePath, sec.TLS.TrustCertsFilePath = brokerCert.CertFile, brokerCert.KeyFile, f.ca.CertFile
	sec.Authn.Enabled = true
	sec.Authn.Providers = []string{
		"org.apache.pulsar.broker.authentication.AuthenticationProviderTls",
		"org.apache.pulsar.broker.authentication.AuthenticationProviderToken",
		"org.apache.pulsar.broker.authentication.AuthenticationProviderBasic",
	}
	sec.Authn.AnonymousUserRole = "anonymous"
	sec.Authn.Token.SecretKey = "file://" + keyFile
	sec.Authn.Basic.Conf = htpasswd
	sec.Authz.Enabled = true
	sec.Authz.SuperUserRoles = []string{"localhost", "superUser", "admin"}
	cfg.Broker.AdvertisedAddress = "localhost"
	if mod != nil {
		mod(&cfg)
	}
	f.s = start(t, cfg)
	t.Cleanup(func() { _ = f.s.Close(context.Background()) })
	port := func(addr string) string { return addr[strings.LastIndexByte(addr, ':'):] }
	f.brokerURL = "pulsar://localhost" + port(f.s.BrokerAddr())
	f.brokerTLS = "pulsar+ssl://localhost" + port(f.s.BrokerAddrTLS())
	f.httpURL = "http://localhost" + port(f.s.HTTPAddr())
	f.httpsURL = "https://localhost" + port(f.s.HTTPSAddr())
	// scripts/pulsar-test-service-start.sh, as the superuser.
	for _, c := range []struct{ method, path, body string }{
		{"POST", "/admin/v2/tenants/public", `{"adminRoles":["anonymous"],"allowedClusters":["standalone"]}`},
		{"POST", "/admin/v2/namespaces/public/default/permissions/anonymous", `["produce","consume"]`},
		{"PUT", "/admin/v2/tenants/private", `{"adminRoles":[],"allowedClusters":["standalone"]}`},
		{"PUT", "/admin/v2/namespaces/private/auth", ``},
		{"POST", "/admin/v2/namespaces/private/auth/permissions/token-principal", `["produce","consume"]`},
	} {
		if code, body := f.rest(t, "Bearer "+f.adminToken, c.method, c.path, c.body); code >= 300 {
			t.Fatalf("%s %s: %d %s", c.method, c.path, code, body)
		}
	}
	return f
}

func (f *secure) token(t testing.TB, sub string, life time.Duration) string {
	t.Helper()
	tok, err := auth.CreateToken(f.secret, "HS256", auth.TokenSpec{Subject: sub, Expiry: life})
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// rest does one admin request over plaintext HTTP with an Authorization header ("" none).
func (f *secure) rest(t testing.TB, authz, method, path, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, f.httpURL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if authz != "" {
		req.Header.Set("Authorization", authz)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func (f *secure) client(t testing.TB, o pulsar.ClientOptions) pulsar.Client {
	t.Helper()
	if o.OperationTimeout == 0 {
		o.OperationTimeout = 10 * time.Second
	}
	o.ConnectionTimeout = 10 * time.Second
	o.Logger = plog.NewLoggerWithSlog(slog.New(slog.DiscardHandler))
	c, err := pulsar.NewClient(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

// canProduce creates a producer and sends one message.
func canProduce(c pulsar.Client, topic string) error {
	p, err := c.CreateProducer(pulsar.ProducerOptions{Topic: topic})
	if err != nil {
		return err
	}
	defer p.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err = p.Send(ctx, &pulsar.ProducerMessage{Payload: []byte("x")})
	return err
}

var topicSeq atomic.Int64

func topicIn(ns string) string {
	return fmt.Sprintf("persistent://%s/t-%d-%d", ns, time.Now().UnixNano(), topicSeq.Add(1))
}

// TestSecureStandaloneClients runs the scenarios of pulsar-client-go's own TLS, token,
// basic and OAuth2 tests (client_impl_test.go) against a secure standalone with the Go
// client: every way in, and every way of being refused.
func TestSecureStandaloneClients(t *testing.T) {
	f := startSecure(t, nil)
	tokFile := filepath.Join(f.dir, "token.txt")
	if err := os.WriteFile(tokFile, []byte(f.tpToken+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	// One authentication object per client: the Go client's providers are not safe to share
	// between clients made at once.
	basicAuth := func(password string) pulsar.Authentication {
		a, err := pulsar.NewAuthenticationBasic("admin", password)
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	public, private := "public/default", "private/auth"
	cases := []struct {
		name string
		o    pulsar.ClientOptions
		ns   string
		ok   bool
	}{
		{"TLS untrusted CA", pulsar.ClientOptions{URL: f.brokerTLS}, public, false},
		{"TLS insecure", pulsar.ClientOptions{URL: f.brokerTLS, TLSAllowInsecureConnection: true}, public, true},
		{"TLS trusted", pulsar.ClientOptions{URL: f.brokerTLS, TLSTrustCertsFilePath: f.ca.CertFile}, public, true},
		{"TLS hostname verified", pulsar.ClientOptions{URL: f.brokerTLS, TLSTrustCertsFilePath: f.ca.CertFile, TLSValidateHostname: true}, public, true},
		{"TLS hostname mismatch", pulsar.ClientOptions{URL: strings.Replace(f.brokerTLS, "localhost", "127.0.0.1", 1), TLSTrustCertsFilePath: f.ca.CertFile, TLSValidateHostname: true}, public, false},
		{"TLS anonymous to private", pulsar.ClientOptions{URL: f.brokerTLS, TLSTrustCertsFilePath: f.ca.CertFile}, private, false},
		{"TLS client certificate", pulsar.ClientOptions{URL: f.brokerTLS, TLSTrustCertsFilePath: f.ca.CertFile, Authentication: pulsar.NewAuthenticationTLS(f.adminCert.CertFile, f.adminCert.KeyFile)}, private, true},
		{"TLS certificate of another CA", pulsar.ClientOptions{URL: f.brokerTLS, TLSTrustCertsFilePath: f.ca.CertFile, Authentication: pulsar.NewAuthenticationTLS(f.strangerCert.CertFile, f.strangerCert.KeyFile)}, private, false},
		{"token", pulsar.ClientOptions{URL: f.brokerURL, Authentication: pulsar.NewAuthenticationToken(f.tpToken)}, private, true},
		{"token from file", pulsar.ClientOptions{URL: f.brokerURL, Authentication: pulsar.NewAuthenticationTokenFromFile(tokFile)}, private, true},
		{"token without permission", pulsar.ClientOptions{URL: f.brokerURL, Authentication: pulsar.NewAuthenticationToken(f.tpToken)}, public, false},
		{"forged token", pulsar.ClientOptions{URL: f.brokerURL, Authentication: pulsar.NewAuthenticationToken(f.tpToken[:len(f.tpToken)-3] + "abc")}, private, false},
		{"HTTP lookup with token", pulsar.ClientOptions{URL: f.httpURL, Authentication: pulsar.NewAuthenticationToken(f.tpToken)}, private, true},
		{"HTTPS with token", pulsar.ClientOptions{URL: f.httpsURL, TLSTrustCertsFilePath: f.ca.CertFile, TLSValidateHostname: true, Authentication: pulsar.NewAuthenticationTokenFromFile(tokFile)}, private, true},
		{"HTTPS anonymous to private", pulsar.ClientOptions{URL: f.httpsURL, TLSTrustCertsFilePath: f.ca.CertFile}, private, false},
		{"HTTPS client certificate", pulsar.ClientOptions{URL: f.httpsURL, TLSTrustCertsFilePath: f.ca.CertFile, Authentication: pulsar.NewAuthenticationTLS(f.adminCert.CertFile, f.adminCert.KeyFile)}, private, true},
		{"HTTP basic", pulsar.ClientOptions{URL: f.httpURL, Authentication: basicAuth("123456")}, private, true},
		{"HTTPS basic", pulsar.ClientOptions{URL: f.httpsURL, TLSTrustCertsFilePath: f.ca.CertFile, TLSValidateHostname: true, Authentication: basicAuth("123456")}, private, true},
		{"wrong basic password", pulsar.ClientOptions{URL: f.brokerURL, Authentication: basicAuth("654321")}, public, false},
		{"TLS transport with basic", pulsar.ClientOptions{URL: f.brokerTLS, TLSCertificateFile: f.adminCert.CertFile, TLSKeyFilePath: f.adminCert.KeyFile, TLSTrustCertsFilePath: f.ca.CertFile, Authentication: basicAuth("123456")}, public, true},
		{"HTTPS transport with basic", pulsar.ClientOptions{URL: f.httpsURL, TLSCertificateFile: f.adminCert.CertFile, TLSKeyFilePath: f.adminCert.KeyFile, TLSTrustCertsFilePath: f.ca.CertFile, Authentication: basicAuth("123456")}, public, true},
	}
	// The cases run at once (a refused one waits out its client's 3 s operation timeout), each
	// with its own client; the subtests then report them one by one.
	// Every client is made before any connects: making an HTTP-URL client writes to
	// net/http's default transport, which the clients' dials read.
	clients := make([]pulsar.Client, len(cases))
	for i, c := range cases {
		o := c.o
		if !c.ok {
			o.OperationTimeout = 3 * time.Second
		}
		clients[i] = f.client(t, o)
	}
	errs := make([]error, len(cases))
	var wg sync.WaitGroup
	for i, c := range cases {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = canProduce(clients[i], topicIn(c.ns))
		}()
	}
	wg.Wait()
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if c.ok != (errs[i] == nil) {
				t.Fatalf("want ok=%v, got %v", c.ok, errs[i])
			}
		})
	}
}

// TestSecureStandaloneAdminREST: the admin API authenticates every request and answers
// 401 to bad credentials, 403 to a role without the permission.
func TestSecureStandaloneAdminREST(t *testing.T) {
	f := startSecure(t, nil)
	basic := "Basic " + base64.StdEncoding.EncodeToString([]byte("admin:123456"))
	for _, c := range []struct {
		authz, method, path string
		want                int
	}{
		{"Bearer " + f.adminToken, "GET", "/admin/v2/tenants", 200},
		{basic, "GET", "/admin/v2/tenants", 200},
		{"", "GET", "/admin/v2/tenants", 403}, // anonymous: authenticated, not a superuser
		{"Bearer " + f.tpToken, "GET", "/admin/v2/tenants", 403},
		{"Bearer x.y.z", "GET", "/admin/v2/tenants", 401},
		{"Basic " + base64.StdEncoding.EncodeToString([]byte("admin:nope")), "GET", "/admin/v2/tenants", 401},
		{"Bearer " + f.tpToken, "GET", "/admin/v2/namespaces/private/auth/permissions", 403},
		{"", "GET", "/admin/v2/namespaces/public/default/permissions", 200}, // anonymous is public's admin
		{"Bearer " + f.tpToken, "GET", "/admin/v2/persistent/private/auth", 200},
		{"", "GET", "/admin/v2/persistent/private/auth", 403},
		{"", "GET", "/metrics", 200},
		{"", "GET", "/status.html", 200},
		{"Bearer " + f.tpToken, "DELETE", "/admin/v2/tenants/public", 403},
	} {
		if code, body := f.rest(t, c.authz, c.method, c.path, ""); code != c.want {
			t.Errorf("%s %s with %.20q: %d %s, want %d", c.method, c.path, c.authz, code, body, c.want)
		}
	}
	// HTTPS with a client certificate is the superuser; another CA's certificate is refused
	// at the handshake.
	get := func(cert auth.Issued) (int, error) {
		tc, err := auth.NewClientTLS(auth.ClientTLSOptions{TrustCertsFile: f.ca.CertFile, CertFile: cert.CertFile, KeyFile: cert.KeyFile})
		if err != nil {
			t.Fatal(err)
		}
		hc := &http.Client{Transport: &http.Transport{TLSClientConfig: tc}}
		resp, err := hc.Get(f.httpsURL + "/admin/v2/tenants")
		if err != nil {
			return 0, err
		}
		resp.Body.Close()
		return resp.StatusCode, nil
	}
	if code, err := get(f.adminCert); err != nil || code != 200 {
		t.Fatalf("HTTPS client certificate: %d %v", code, err)
	}
	if code, err := get(f.strangerCert); err == nil {
		t.Fatalf("another CA's certificate got %d", code)
	}
}

// tokenNoT is token without a testing.T (for fixtures that only need a secret).
func (f *secure) tokenNoT(sub string) (string, error) {
	return auth.CreateToken(f.secret, "HS256", auth.TokenSpec{Subject: sub})
}
