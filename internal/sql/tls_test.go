package sql

import (
	"crypto/tls"
	"crypto/x509"
	"database/sql"
	"errors"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/magnetar-io/magnetar/internal/auth"
	"github.com/magnetar-io/magnetar/internal/config"
)

// TestTLSIsOfferedRequiredAndReloaded: with the broker's certificate keys the server takes
// MySQL's SSL request; with sqlRequireSecureTransport a plain login is refused; a new
// certificate written over the files serves the next connections.
func TestTLSIsOfferedRequiredAndReloaded(t *testing.T) {
	dir := t.TempDir()
	ca, err := auth.NewCA(filepath.Join(dir, "ca"), "sql test CA", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	issue := func(name string) *big.Int {
		t.Helper()
		c, err := ca.Issue(auth.IssueOptions{Name: name, Hosts: []string{"127.0.0.1", "localhost"}})
		if err != nil {
			t.Fatal(err)
		}
		// Served from fixed paths, as an operator (or cert-manager) replaces them.
		for from, to := range map[string]string{c.CertFile: "server.pem", c.KeyFile: "server-key.pem"} {
			b, err := os.ReadFile(from)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, to+".tmp"), b, 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.Rename(filepath.Join(dir, to+".tmp"), filepath.Join(dir, to)); err != nil {
				t.Fatal(err)
			}
		}
		return serialOf(t, filepath.Join(dir, "server.pem"))
	}
	first := issue("one")
	stls, err := auth.NewServerTLS(config.TLSServerConfig{CertificateFilePath: filepath.Join(dir, "server.pem"),
		KeyFilePath: filepath.Join(dir, "server-key.pem"), TrustCertsFilePath: ca.CertFile, CertRefreshCheckDurationSec: 1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := New(Options{Config: func() config.SQLConfig {
		c := config.DefaultSQLConfig()
		c.RequireSecureTransport = true
		return c
	}(), Source: newMemSource()}); err == nil || !strings.Contains(err.Error(), "sqlRequireSecureTransport") {
		t.Fatalf("requiring TLS without certificates: %v", err)
	}
	cfg := config.DefaultSQLConfig()
	cfg.RequireSecureTransport = true
	s, err := New(Options{Config: cfg, Source: ordersSource(t), TLS: stls})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = s.Serve(ln) }()
	t.Cleanup(func() { _ = s.Close() })

	pool := x509.NewCertPool()
	pem, err := os.ReadFile(ca.CertFile)
	if err != nil {
		t.Fatal(err)
	}
	pool.AppendCertsFromPEM(pem)
	// connect runs one statement on a new connection (TLS when tc is set) and returns the
	// serial number of the certificate the server presented.
	connect := func(tc *tls.Config) (*big.Int, error) {
		var mu sync.Mutex
		var serial *big.Int
		mc := mysql.NewConfig()
		mc.Net, mc.Addr, mc.User, mc.DBName = "tcp", ln.Addr().String(), "u", "public/default"
		mc.Timeout = time.Minute
		if tc != nil {
			tc = tc.Clone()
			tc.VerifyConnection = func(cs tls.ConnectionState) error {
				mu.Lock()
				serial = cs.PeerCertificates[0].SerialNumber
				mu.Unlock()
				return nil
			}
			mc.TLS = tc
		}
		conn, err := mysql.NewConnector(mc)
		if err != nil {
			return nil, err
		}
		db := sql.OpenDB(conn)
		defer db.Close()
		var n string
		if err := db.QueryRow("SELECT count(*) FROM items").Scan(&n); err != nil {
			return nil, err
		}
		if n != "7" {
			return nil, errors.New("count(*) FROM items = " + n)
		}
		mu.Lock()
		defer mu.Unlock()
		return serial, nil
	}

	// The listener answers the handshake's response with its own error first; a client
	// that read past it would meet requireTLS's refusal before any credential is checked.
	if _, err = connect(nil); err == nil || !strings.Contains(err.Error(), "must use SSL/TLS") {
		t.Fatalf("a plain connection: %v, want a refusal naming TLS", err)
	}
	if _, err := connect(&tls.Config{RootCAs: x509.NewCertPool(), ServerName: "127.0.0.1"}); err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Fatalf("a client that does not trust the CA: %v", err)
	}
	got, err := connect(&tls.Config{RootCAs: pool, ServerName: "127.0.0.1"})
	if err != nil {
		t.Fatalf("over TLS: %v", err)
	}
	if got.Cmp(first) != 0 {
		t.Fatalf("served certificate %v, want %v", got, first)
	}

	second := issue("two")
	deadline := time.Now().Add(time.Minute)
	for {
		got, err := connect(&tls.Config{RootCAs: pool, ServerName: "127.0.0.1"})
		if err != nil {
			t.Fatalf("over TLS after the certificate changed: %v", err)
		}
		if got.Cmp(second) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("still served certificate %v a minute after %v replaced it", got, second)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func serialOf(t *testing.T, certFile string) *big.Int {
	t.Helper()
	c, err := tls.LoadX509KeyPair(certFile, strings.TrimSuffix(certFile, ".pem")+"-key.pem")
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := x509.ParseCertificate(c.Certificate[0])
	if err != nil {
		t.Fatal(err)
	}
	return leaf.SerialNumber
}
