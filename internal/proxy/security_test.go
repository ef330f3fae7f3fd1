package proxy_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
	plog "github.com/apache/pulsar-client-go/pulsar/log"

	"github.com/magnetar-io/magnetar/internal/auth"
	"github.com/magnetar-io/magnetar/internal/config"
	"github.com/magnetar-io/magnetar/internal/standalone"
)

// TestProxySecurity: a TLS proxy that authenticates clients in front of a broker that
// authenticates and authorizes. The proxy speaks to the broker as its own role (a
// superuser here), naming the client; the broker authorizes the client's role, so the
// proxy's privileges never leak to its clients (no confused deputy), on the binary
// protocol and over HTTP.
func TestProxySecurity(t *testing.T) {
	dir := t.TempDir()
	ca, err := auth.NewCA(filepath.Join(dir, "ca"), "test CA", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	brokerCert, _ := ca.Issue(auth.IssueOptions{Name: "broker", Hosts: []string{"localhost", "127.0.0.1"}})
	proxyCert, _ := ca.Issue(auth.IssueOptions{Name: "proxy", Hosts: []string{"localhost", "127.0.0.1"}})
	secret, _ := auth.NewSecretKey("HS256")
	keyFile := filepath.Join(dir, "secret.key")
	if err := os.WriteFile(keyFile, secret, 0o600); err != nil {
		t.Fatal(err)
	}
	tok := func(sub string) string {
		s, err := auth.CreateToken(secret, "", auth.TokenSpec{Subject: sub})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	authn := func(c *config.AuthenticationConfig) {
		c.Enabled, c.Providers, c.Token.SecretKey, c.AnonymousUserRole = true, []string{"token"}, "file://"+keyFile, "anonymous"
	}

	// The broker: TLS listeners, tokens, authorization; "proxy" is a proxy role and a superuser.
	scfg := config.DefaultStandaloneConfig()
	scfg.DataDir = filepath.Join(dir, "data")
	scfg.BookieAddress = "127.0.0.1:0"
	scfg.Broker.BindAddress, scfg.Broker.ServicePort, scfg.Broker.WebServicePort = "127.0.0.1", 0, 0
	sec := &scfg.Broker.Security
	sec.ServicePortTLS, sec.WebServicePortTLS = 0, 0
	sec.TLS.CertificateFilePath, sec.TLS.KeyFilePath, sec.TLS.TrustCertsFilePath = brokerCert.CertFile, brokerCert.KeyFile, ca.CertFile
	authn(&sec.Authn)
	sec.Authn.ProxyRoles = []string{"proxy"}
	sec.Authz.Enabled, sec.Authz.SuperUserRoles = true, []string{"admin", "proxy"}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	sa, err := standalone.Start(ctx, scfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer sa.Close(context.Background())
	admin := func(method, path, body, token string) int {
		t.Helper()
		req, _ := http.NewRequest(method, "http://"+sa.HTTPAddr()+path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if code := admin("POST", "/admin/v2/namespaces/public/default/permissions/alice", `["produce","consume"]`, tok("admin")); code >= 300 {
		t.Fatalf("grant: %d", code)
	}

	// The proxy: TLS listeners, authenticates clients with the same tokens, reaches the
	// broker's TLS listeners as "proxy" with its certificate verified.
	pcfg := proxyConfig()
	pcfg.ServicePortTLS, pcfg.WebServicePortTLS = 0, 0
	pcfg.TLS.CertificateFilePath, pcfg.TLS.KeyFilePath = proxyCert.CertFile, proxyCert.KeyFile
	authn(&pcfg.Authn)
	pcfg.BrokerServiceURL = "pulsar://" + sa.BrokerAddr()
	pcfg.BrokerServiceURLTLS = "pulsar+ssl://" + sa.BrokerAddrTLS()
	pcfg.BrokerWebServiceURL = "http://" + sa.HTTPAddr()
	pcfg.BrokerWebServiceURLTLS = "https://" + sa.HTTPSAddr()
	pcfg.TLSEnabledWithBroker = true
	pcfg.Client = config.ClientAuthConfig{TrustCertsFilePath: ca.CertFile, HostnameVerification: true,
		AuthenticationPlugin: "org.apache.pulsar.client.impl.auth.AuthenticationToken", AuthenticationParameters: "token:" + tok("proxy")}
	p := startProxy(t, pcfg, nil)

	produce := func(url string, token string, topic string) error {
		o := pulsar.ClientOptions{URL: url, TLSTrustCertsFilePath: ca.CertFile, OperationTimeout: 5 * time.Second,
			ConnectionTimeout: 5 * time.Second, Logger: plog.NewLoggerWithSlog(slog.New(slog.DiscardHandler))}
		if token != "" {
			o.Authentication = pulsar.NewAuthenticationToken(token)
		}
		c, err := pulsar.NewClient(o)
		if err != nil {
			return err
		}
		defer c.Close()
		pr, err := c.CreateProducer(pulsar.ProducerOptions{Topic: topic})
		if err != nil {
			return err
		}
		defer pr.Close()
		sctx, scancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer scancel()
		_, err = pr.Send(sctx, &pulsar.ProducerMessage{Payload: []byte("via proxy")})
		return err
	}
	// The cases run at once: a refused client retries until its 5 s operation timeout.
	type pcase struct {
		what, url, token, topic string
		ok                      bool
	}
	var cases []pcase
	for _, url := range []string{"pulsar+ssl://localhost" + port(p.AddrTLS()), "pulsar://" + p.Addr()} {
		cases = append(cases,
			pcase{"alice", url, tok("alice"), "persistent://public/default/proxied", true},
			// The proxy is a superuser, alice is not: she gets her own rights only.
			pcase{"alice outside her grant", url, tok("alice"), "persistent://other/ns/t", false},
			pcase{"anonymous", url, "", "persistent://public/default/proxied", false},
			pcase{"a bad token", url, "not-a-token", "persistent://public/default/proxied", false})
	}
	errs := make([]error, len(cases))
	var wg sync.WaitGroup
	for i, c := range cases {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = produce(c.url, c.token, c.topic)
		}()
	}
	wg.Wait()
	for i, c := range cases {
		if c.ok != (errs[i] == nil) {
			t.Errorf("%s through the proxy %s: want ok=%v, got %v", c.what, c.url, c.ok, errs[i])
		}
	}

	// HTTP: the broker sees the client's role, whatever the client claims.
	get := func(path, token string, hdr map[string]string) int {
		t.Helper()
		tc, _ := auth.NewClientTLS(auth.ClientTLSOptions{TrustCertsFile: ca.CertFile})
		hc := &http.Client{Transport: &http.Transport{TLSClientConfig: tc}}
		req, _ := http.NewRequest("GET", "https://localhost"+port(p.HTTPSAddr())+path, nil)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		for k, v := range hdr {
			req.Header.Set(k, v)
		}
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode
	}
	for _, c := range []struct {
		path, token string
		hdr         map[string]string
		want        int
	}{
		{"/admin/v2/tenants", tok("admin"), nil, 200},
		{"/admin/v2/tenants", tok("alice"), nil, 403},
		{"/admin/v2/tenants", "", map[string]string{"X-Original-Principal": "admin"}, 403},
		{"/admin/v2/tenants", "bogus", nil, 401},
		{"/admin/v2/persistent/public/default/proxied/stats", tok("alice"), nil, 200},
	} {
		if got := get(c.path, c.token, c.hdr); got != c.want {
			t.Errorf("GET %s via proxy (token %.10q, headers %v): %d, want %d", c.path, c.token, c.hdr, got, c.want)
		}
	}
}

func port(addr string) string { return addr[strings.LastIndexByte(addr, ':'):] }
