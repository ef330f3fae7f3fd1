package cli

import (
	"crypto/tls"
	"encoding/base64"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/magnetar-io/magnetar/internal/auth"
)

// TestAdminAuthFlagsAndClientConf: magnetar admin sends the credentials and TLS settings of
// its flags or of a client.conf, like pulsar-admin.
func TestAdminAuthFlagsAndClientConf(t *testing.T) {
	dir := t.TempDir()
	ca, err := auth.NewCA(filepath.Join(dir, "ca"), "cli CA", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	srvCert, _ := ca.Issue(auth.IssueOptions{Name: "server", Hosts: []string{"127.0.0.1", "localhost"}})
	client, _ := ca.Issue(auth.IssueOptions{Name: "client", CommonName: "admin"})
	got := make(chan string, 8)
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		who := r.Header.Get("Authorization")
		if r.TLS != nil && len(r.TLS.PeerCertificates) > 0 {
			who += " cert=" + r.TLS.PeerCertificates[0].Subject.CommonName
		}
		got <- who
		_, _ = w.Write([]byte(`["public"]`))
	}))
	cert, err := tls.LoadX509KeyPair(srvCert.CertFile, srvCert.KeyFile)
	if err != nil {
		t.Fatal(err)
	}
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{cert}, ClientAuth: tls.RequestClientCert}
	srv.StartTLS()
	defer srv.Close()
	url := strings.Replace(srv.URL, "127.0.0.1", "localhost", 1)

	code, out, errOut := run(t, nil, "admin", "--admin-url", url, "--tls-trust-cert-path", ca.CertFile, "--tls-enable-hostname-verification",
		"--auth-plugin", "org.apache.pulsar.client.impl.auth.AuthenticationToken", "--auth-params", "token:abc.def.ghi", "tenants", "list")
	if code != 0 || strings.TrimSpace(out) != "public" {
		t.Fatalf("token: %d %q %q", code, out, errOut)
	}
	if w := <-got; w != "Bearer abc.def.ghi" {
		t.Fatalf("server saw %q", w)
	}
	// Multipart uploads (packages, functions) carry the same credentials and TLS settings.
	pkg := filepath.Join(dir, "fn.bin")
	if err := os.WriteFile(pkg, []byte("\x7fELF package"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"packages", "upload", "function://public/default/fn@1", "--path", pkg, "--description", "d"},
		{"functions", "create", "--name", "fn", "--inputs", "persistent://public/default/in", "--go", pkg},
	} {
		code, _, errOut := run(t, nil, append([]string{"admin", "--admin-url", url, "--tls-trust-cert-path", ca.CertFile,
			"--auth-plugin", "token", "--auth-params", "token:abc.def.ghi"}, args...)...)
		if code != 0 {
			t.Fatalf("%v: %d %q", args[:2], code, errOut)
		}
		if w := <-got; w != "Bearer abc.def.ghi" {
			t.Fatalf("%v: server saw %q", args[:2], w)
		}
	}
	// Without trusting the CA the server is refused before anything is sent.
	if code, _, _ := run(t, nil, "admin", "--admin-url", url, "--auth-plugin", "token", "--auth-params", "token:secret", "tenants", "list"); code == 0 {
		t.Fatal("untrusted server accepted")
	}
	select {
	case w := <-got:
		t.Fatalf("credentials reached an untrusted server: %q", w)
	default:
	}
	// client.conf: basic credentials and a TLS client certificate, as pulsar-admin reads it.
	conf := filepath.Join(dir, "client.conf")
	body := "webServiceUrl=" + url + "\nauthPlugin=org.apache.pulsar.client.impl.auth.AuthenticationTls\n" +
		"authParams=tlsCertFile:" + client.CertFile + ",tlsKeyFile:" + client.KeyFile + "\n" +
		"tlsTrustCertsFilePath=" + ca.CertFile + "\ntlsAllowInsecureConnection=false\n"
	if err := os.WriteFile(conf, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	if code, _, e := run(t, []string{"MAGNETAR_CONFIG=" + conf}, "admin", "tenants", "list"); code != 0 {
		t.Fatalf("client.conf: %s", e)
	}
	if w := <-got; w != " cert=admin" {
		t.Fatalf("server saw %q", w)
	}
	// A flag beats the file.
	if code, _, e := run(t, nil, "--config", conf, "admin", "--auth-plugin", "basic", "--auth-params", `{"userId":"u","password":"p"}`, "tenants", "list"); code != 0 {
		t.Fatalf("flag over client.conf: %s", e)
	}
	if w := <-got; w != "Basic "+base64.StdEncoding.EncodeToString([]byte("u:p")) {
		t.Fatalf("server saw %q", w)
	}
	if code, _, _ := run(t, nil, "admin", "--admin-url", url, "--auth-plugin", "kerberos", "tenants", "list"); code != 2 {
		t.Fatalf("unknown plugin: exit %d", code)
	}
}
