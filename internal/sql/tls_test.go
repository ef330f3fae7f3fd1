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
	"github.com/magnetar-io/magnetar/internal/schema"
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

// TestClientCertificateLogsInAsItsCommonName: with the tls provider on, a connection that
// presents a certificate trusted by tlsTrustCertsFilePath and no password is the role of
// the certificate's common name (Pulsar's AuthenticationProviderTls), whatever user name it
// gives, and authorization applies to that role; a password, when given, is the credential.
// tlsRequireTrustedClientCertOnConnect refuses a handshake without a trusted certificate.
func TestClientCertificateLogsInAsItsCommonName(t *testing.T) {
	dir := t.TempDir()
	ca, err := auth.NewCA(filepath.Join(dir, "ca"), "sql test CA", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	other, err := auth.NewCA(filepath.Join(dir, "other"), "another CA", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := ca.Issue(auth.IssueOptions{Name: "server", Hosts: []string{"127.0.0.1"}})
	if err != nil {
		t.Fatal(err)
	}
	stls, err := auth.NewServerTLS(config.TLSServerConfig{CertificateFilePath: srv.CertFile, KeyFilePath: srv.KeyFile,
		TrustCertsFilePath: ca.CertFile, RequireTrustedClientCert: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	src := ordersSource(t)
	src.add(t, "other/ns/secret", TopicInfo{Schema: schema.Schema{Type: schema.String}}, -1, 0, 3,
		[]msg{{payload: []byte("s"), pub: 1_700_000_000_000}})
	addr, token := secureServer(t, src, stls)
	pem, err := os.ReadFile(ca.CertFile)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(pem)
	// as connects with a client certificate for cn issued by from (none when from is nil).
	as := func(from *auth.CA, cn, password, db string) *sql.DB {
		t.Helper()
		tc := &tls.Config{RootCAs: pool, ServerName: "127.0.0.1"}
		if from != nil {
			c, err := from.Issue(auth.IssueOptions{Name: filepath.Base(from.CertFile) + "-" + cn, CommonName: cn})
			if err != nil {
				t.Fatal(err)
			}
			kp, err := tls.LoadX509KeyPair(c.CertFile, c.KeyFile)
			if err != nil {
				t.Fatal(err)
			}
			tc.Certificates = []tls.Certificate{kp}
		}
		return dial(t, addr, "whoever", password, db, tc)
	}
	code := func(err error) int {
		var me *mysql.MySQLError
		if errors.As(err, &me) {
			return int(me.Number)
		}
		return 0
	}

	reader := as(ca, "reader", "", "public/default")
	if got := queryRows(t, reader, "SELECT count(*) FROM orders WHERE __partition__ = 1"); got[0][0] != "1000" {
		t.Fatalf("the reader certificate: %v", got)
	}
	items := as(ca, "items-reader", "", "public/default")
	if got := queryRows(t, items, "SELECT count(*) FROM items"); got[0][0] != "7" {
		t.Fatalf("the items-reader certificate on items: %v", got)
	}
	if _, err := items.Exec("SELECT count(*) FROM orders"); code(err) != erTableAccessDenied {
		t.Fatalf("the items-reader certificate on orders: %v, want error 1142", err)
	}
	nobody := as(ca, "nobody", "", "")
	for _, r := range queryRows(t, nobody, "SHOW SCHEMAS") {
		if strings.Contains(r[0], "/") {
			t.Fatalf("the nobody certificate's SHOW SCHEMAS lists %s", r[0])
		}
	}
	if _, err := nobody.Exec("SELECT * FROM `other/ns`.secret"); code(err) != 1049 {
		t.Fatalf("the nobody certificate on other/ns: %v, want error 1049", err)
	}
	if got := queryRows(t, as(ca, "admin", "", ""), "SELECT count(*) FROM `other/ns`.secret"); got[0][0] != "1" {
		t.Fatalf("the superuser's certificate: %v", got)
	}
	// A password is the login's credential, over the certificate of another role.
	if got := queryRows(t, as(ca, "nobody", "token:"+token("reader"), "public/default"), "SELECT count(*) FROM orders WHERE __partition__ = 1"); got[0][0] != "1000" {
		t.Fatalf("a reader token over the nobody certificate: %v", got)
	}
	if err := as(ca, "reader", "token:forged.token.value", "").Ping(); code(err) != 1045 {
		t.Fatalf("a forged token over the reader certificate: %v, want access denied (1045)", err)
	}
	// tlsRequireTrustedClientCertOnConnect: no certificate, or one of another CA, is refused
	// in the handshake.
	for name, from := range map[string]*auth.CA{"no certificate": nil, "another CA's certificate": other} {
		if err := as(from, "reader", "", "").Ping(); err == nil || code(err) != 0 {
			t.Errorf("%s: %v, want the TLS handshake refused", name, err)
		}
	}
}
