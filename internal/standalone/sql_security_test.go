package standalone_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"database/sql"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
	"github.com/go-sql-driver/mysql"
)

// TestSQLUsesTheBrokersSecurity (issue 22): the SQL server inside a secure standalone
// authenticates with the broker's providers (a token as the password; no password is the
// anonymous role), authorizes each table read with the consume permission, lists to each
// role only what it may consume, and takes TLS with the broker's certificate.
func TestSQLUsesTheBrokersSecurity(t *testing.T) {
	f := startSecure(t, nil)
	c, err := pulsar.NewClient(pulsar.ClientOptions{URL: f.brokerURL, Authentication: pulsar.NewAuthenticationToken(f.tpToken), OperationTimeout: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, topic := range []string{"persistent://private/auth/secret", "persistent://public/default/open"} {
		p, err := c.CreateProducer(pulsar.ProducerOptions{Topic: topic})
		if err != nil && strings.Contains(topic, "public") {
			// token-principal may not produce to public/default: use the anonymous role.
			ac, aerr := pulsar.NewClient(pulsar.ClientOptions{URL: f.brokerURL, OperationTimeout: 30 * time.Second})
			if aerr != nil {
				t.Fatal(aerr)
			}
			defer ac.Close()
			p, err = ac.CreateProducer(pulsar.ProducerOptions{Topic: topic})
		}
		if err != nil {
			t.Fatalf("%s: %v", topic, err)
		}
		for range 3 {
			if _, err := p.Send(ctx, &pulsar.ProducerMessage{Payload: []byte("m")}); err != nil {
				t.Fatal(err)
			}
		}
		p.Close()
	}
	pem, err := os.ReadFile(f.ca.CertFile)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(pem)
	useTLS := false
	open := func(user, password, db string) *sql.DB {
		mc := mysql.NewConfig()
		mc.Net, mc.Addr, mc.User, mc.Passwd, mc.DBName = "tcp", f.s.SQLAddr(), user, password, db
		mc.AllowCleartextPasswords = true
		if useTLS {
			mc.TLS = &tls.Config{RootCAs: pool, ServerName: "localhost"}
		}
		conn, err := mysql.NewConnector(mc)
		if err != nil {
			t.Fatal(err)
		}
		db2 := sql.OpenDB(conn)
		t.Cleanup(func() { _ = db2.Close() })
		return db2
	}
	count := func(db *sql.DB, table string) (string, error) {
		var n string
		err := db.QueryRow("SELECT count(*) FROM " + table).Scan(&n)
		return n, err
	}
	if n, err := count(open("tp", "token:"+f.tpToken, "private/auth"), "secret"); err != nil || n != "3" {
		t.Fatalf("token-principal on private/auth: %v %v", n, err)
	}
	if n, err := count(open("anon", "", "public/default"), "open"); err != nil || n != "3" {
		t.Fatalf("anonymous on public/default: %v %v", n, err)
	}
	// A namespace the role may not see is an unknown database, as one that does not exist.
	var me *mysql.MySQLError
	if _, err := count(open("anon", "", "private/auth"), "secret"); !errors.As(err, &me) || me.Number != 1049 {
		t.Fatalf("anonymous on private/auth: %v, want error 1049", err)
	}
	if _, err := count(open("x", "token:"+f.token(t, "stranger", 0), ""), "`private/auth`.secret"); !errors.As(err, &me) || me.Number != 1049 {
		t.Fatalf("an ungranted role on private/auth: %v, want error 1049", err)
	}
	if _, err := count(open("x", "token:forged.token.value", "private/auth"), "secret"); err == nil || !strings.Contains(err.Error(), "Access denied") {
		t.Fatalf("a forged token: %v, want access denied", err)
	}

	list := func(db *sql.DB, q string) string {
		t.Helper()
		rows, err := db.Query(q)
		if err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		defer rows.Close()
		var out []string
		for rows.Next() {
			var n string
			if err := rows.Scan(&n); err != nil {
				t.Fatal(err)
			}
			out = append(out, n)
		}
		return " " + strings.Join(out, " ") + " "
	}
	tp, anon := open("tp", "token:"+f.tpToken, "private/auth"), open("anon", "", "public/default")
	if got := list(tp, "SHOW SCHEMAS"); !strings.Contains(got, " private/auth ") || strings.Contains(got, " public/default ") {
		t.Errorf("token-principal's SHOW SCHEMAS:%s", got)
	}
	if got := list(anon, "SHOW SCHEMAS"); strings.Contains(got, " private/auth ") || !strings.Contains(got, " public/default ") {
		t.Errorf("anonymous's SHOW SCHEMAS:%s", got)
	}
	if got := list(tp, "SHOW TABLES FROM `private/auth`"); got != " secret " {
		t.Errorf("token-principal's SHOW TABLES FROM private/auth:%s", got)
	}
	if _, err := anon.Exec("SHOW TABLES FROM `private/auth`"); !errors.As(err, &me) || me.Number != 1049 {
		t.Errorf("anonymous's SHOW TABLES FROM private/auth: %v, want error 1049", err)
	}
	if got := list(open("admin", "token:"+f.adminToken, "public/default"), "SHOW SCHEMAS"); !strings.Contains(got, " private/auth ") || !strings.Contains(got, " public/default ") {
		t.Errorf("the superuser's SHOW SCHEMAS:%s", got)
	}

	// The same logins over TLS, with the broker's certificate (tlsCertificateFilePath).
	useTLS = true
	if n, err := count(open("tp", "token:"+f.tpToken, "private/auth"), "secret"); err != nil || n != "3" {
		t.Fatalf("token-principal over TLS: %v %v", n, err)
	}
	if _, err := count(open("x", "token:forged.token.value", "private/auth"), "secret"); err == nil || !strings.Contains(err.Error(), "Access denied") {
		t.Fatalf("a forged token over TLS: %v, want access denied", err)
	}
}
