package auth

import (
	"crypto/tls"
	"errors"
	"io"
	"net"
	"os"
	"testing"
	"time"

	"github.com/magnetar-io/magnetar/internal/config"
)

type tlsFixture struct {
	ca, otherCA              *CA
	server, client, stranger Issued
}

func newTLSFixture(t *testing.T) tlsFixture {
	t.Helper()
	ca, err := NewCA(t.TempDir(), "test CA", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	other, err := NewCA(t.TempDir(), "other CA", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	f := tlsFixture{ca: ca, otherCA: other}
	if f.server, err = ca.Issue(IssueOptions{Name: "broker", Hosts: []string{"localhost", "127.0.0.1"}}); err != nil {
		t.Fatal(err)
	}
	if f.client, err = ca.Issue(IssueOptions{Name: "client", CommonName: "alice"}); err != nil {
		t.Fatal(err)
	}
	if f.stranger, err = other.Issue(IssueOptions{Name: "stranger", CommonName: "admin"}); err != nil {
		t.Fatal(err)
	}
	return f
}

// serveTLS accepts one connection at a time and reports the verified peer chain's CN.
func serveTLS(t *testing.T, st *ServerTLS) (addr string, peers <-chan string) {
	t.Helper()
	ln, err := tls.Listen("tcp", "127.0.0.1:0", st.Config())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	ch := make(chan string, 16)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				tc := c.(*tls.Conn)
				if err := tc.Handshake(); err != nil {
					ch <- "handshake: " + err.Error()
					return
				}
				cs := tc.ConnectionState()
				cn := "-"
				if chain := st.PeerCertificates(&cs); chain != nil {
					cn = chain[0].Subject.CommonName
				}
				ch <- cn
				_, _ = io.WriteString(tc, "x")
			}()
		}
	}()
	return ln.Addr().String(), ch
}

func dial(addr string, cfg *tls.Config) error {
	c, err := tls.Dial("tcp", addr, cfg)
	if err != nil {
		return err
	}
	defer c.Close()
	_, err = io.ReadFull(c, make([]byte, 1))
	return err
}

func TestTLSClientCertificates(t *testing.T) {
	f := newTLSFixture(t)
	st, err := NewServerTLS(config.TLSServerConfig{CertificateFilePath: f.server.CertFile, KeyFilePath: f.server.KeyFile,
		TrustCertsFilePath: f.ca.CertFile}, nil)
	if err != nil {
		t.Fatal(err)
	}
	addr, peers := serveTLS(t, st)
	client := func(o ClientTLSOptions) *tls.Config {
		t.Helper()
		o.TrustCertsFile = f.ca.CertFile
		c, err := NewClientTLS(o)
		if err != nil {
			t.Fatal(err)
		}
		c.ServerName = "localhost"
		return c
	}
	if err := dial(addr, client(ClientTLSOptions{CertFile: f.client.CertFile, KeyFile: f.client.KeyFile})); err != nil {
		t.Fatal(err)
	}
	if cn := <-peers; cn != "alice" {
		t.Fatalf("peer %q", cn)
	}
	if err := dial(addr, client(ClientTLSOptions{})); err != nil {
		t.Fatal(err)
	}
	if cn := <-peers; cn != "-" {
		t.Fatalf("no cert: peer %q", cn)
	}
	// A certificate from another CA does not get through the handshake.
	_ = dial(addr, client(ClientTLSOptions{CertFile: f.stranger.CertFile, KeyFile: f.stranger.KeyFile}))
	if r := <-peers; r == "admin" || r == "-" {
		t.Fatalf("certificate of another CA: %q", r)
	}
	// A client trusting another CA refuses our server; hostname verification is separate.
	bad, _ := NewClientTLS(ClientTLSOptions{TrustCertsFile: f.otherCA.CertFile})
	bad.ServerName = "localhost"
	if err := dial(addr, bad); err == nil {
		t.Fatal("server of another CA trusted")
	}
	<-peers
	wrongHost := client(ClientTLSOptions{VerifyHostname: true})
	wrongHost.ServerName = "evil.example"
	if err := dial(addr, wrongHost); err == nil {
		t.Fatal("hostname not verified")
	}
	<-peers
	noHostCheck := client(ClientTLSOptions{})
	noHostCheck.ServerName = "evil.example"
	if err := dial(addr, noHostCheck); err != nil {
		t.Fatalf("chain-only verification: %v", err)
	}
	<-peers
}

func TestTLSRequireTrustedAndInsecure(t *testing.T) {
	f := newTLSFixture(t)
	base := config.TLSServerConfig{CertificateFilePath: f.server.CertFile, KeyFilePath: f.server.KeyFile, TrustCertsFilePath: f.ca.CertFile}
	req := base
	req.RequireTrustedClientCert = true
	st, err := NewServerTLS(req, nil)
	if err != nil {
		t.Fatal(err)
	}
	addr, peers := serveTLS(t, st)
	plain, _ := NewClientTLS(ClientTLSOptions{TrustCertsFile: f.ca.CertFile})
	if err := dial(addr, plain); err == nil {
		t.Fatal("no client certificate accepted with tlsRequireTrustedClientCertOnConnect")
	}
	<-peers

	ins := base
	ins.AllowInsecureConnection = true
	st2, err := NewServerTLS(ins, nil)
	if err != nil {
		t.Fatal(err)
	}
	addr2, peers2 := serveTLS(t, st2)
	stranger, _ := NewClientTLS(ClientTLSOptions{TrustCertsFile: f.ca.CertFile, CertFile: f.stranger.CertFile, KeyFile: f.stranger.KeyFile})
	if err := dial(addr2, stranger); err != nil {
		t.Fatalf("insecure mode refused an untrusted certificate: %v", err)
	}
	if cn := <-peers2; cn != "-" {
		t.Fatalf("untrusted certificate authenticated as %q", cn)
	}
	good, _ := NewClientTLS(ClientTLSOptions{TrustCertsFile: f.ca.CertFile, CertFile: f.client.CertFile, KeyFile: f.client.KeyFile})
	if err := dial(addr2, good); err != nil {
		t.Fatal(err)
	}
	if cn := <-peers2; cn != "alice" {
		t.Fatalf("insecure mode, trusted cert: %q", cn)
	}
}

func TestTLSReload(t *testing.T) {
	f := newTLSFixture(t)
	st, err := NewServerTLS(config.TLSServerConfig{CertificateFilePath: f.server.CertFile, KeyFilePath: f.server.KeyFile}, nil)
	if err != nil {
		t.Fatal(err)
	}
	st.m.refresh = time.Nanosecond // check on every handshake
	addr, peers := serveTLS(t, st)
	serial := func() string {
		c, err := tls.Dial("tcp", addr, &tls.Config{InsecureSkipVerify: true})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		_, _ = io.ReadFull(c, make([]byte, 1))
		<-peers
		return c.ConnectionState().PeerCertificates[0].SerialNumber.String()
	}
	first := serial()
	if again := serial(); again != first {
		t.Fatal("certificate changed without a file change")
	}
	// Issue a new certificate into the same files.
	if _, err := f.ca.Issue(IssueOptions{Name: "broker", Hosts: []string{"localhost"}}); err != nil {
		t.Fatal(err)
	}
	// Make sure the modification time moves even on coarse file systems.
	later := time.Now().Add(time.Minute)
	_ = os.Chtimes(f.server.CertFile, later, later)
	if next := serial(); next == first {
		t.Fatal("certificate not reloaded")
	}
	// A broken file keeps the current certificate.
	_ = os.WriteFile(f.server.CertFile, []byte("garbage"), 0o600)
	_ = os.Chtimes(f.server.CertFile, later.Add(time.Minute), later.Add(time.Minute))
	if s := serial(); s == "" {
		t.Fatal("no certificate after a broken reload")
	}
}

func TestTLSConfigErrors(t *testing.T) {
	f := newTLSFixture(t)
	for name, c := range map[string]config.TLSServerConfig{
		"no key":        {CertificateFilePath: f.server.CertFile},
		"missing file":  {CertificateFilePath: "/nope.pem", KeyFilePath: "/nope-key.pem"},
		"bad protocol":  {CertificateFilePath: f.server.CertFile, KeyFilePath: f.server.KeyFile, Protocols: []string{"SSLv3"}},
		"bad cipher":    {CertificateFilePath: f.server.CertFile, KeyFilePath: f.server.KeyFile, Ciphers: []string{"TLS_RSA_WITH_RC4_128_SHA"}},
		"require no CA": {CertificateFilePath: f.server.CertFile, KeyFilePath: f.server.KeyFile, RequireTrustedClientCert: true},
		"key mismatch":  {CertificateFilePath: f.server.CertFile, KeyFilePath: f.client.KeyFile},
		"trust not PEM": {CertificateFilePath: f.server.CertFile, KeyFilePath: f.server.KeyFile, TrustCertsFilePath: f.server.KeyFile},
	} {
		if _, err := NewServerTLS(c, nil); !errors.Is(err, ErrBadConfig) {
			t.Errorf("%s: %v", name, err)
		}
	}
	// TLSv1.3 only refuses a TLS 1.2 client.
	st, err := NewServerTLS(config.TLSServerConfig{CertificateFilePath: f.server.CertFile, KeyFilePath: f.server.KeyFile,
		Protocols: []string{"TLSv1.3"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	addr, peers := serveTLS(t, st)
	if err := dial(addr, &tls.Config{InsecureSkipVerify: true, MaxVersion: tls.VersionTLS12}); err == nil {
		t.Fatal("TLS 1.2 client accepted by a TLSv1.3-only listener")
	}
	<-peers
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = conn.Write([]byte("GET / HTTP/1.0\r\n\r\n")) // plaintext to a TLS port
	conn.Close()
	<-peers
}
