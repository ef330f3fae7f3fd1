package sql

import (
	"context"
	"database/sql"
	"encoding/base64"
	"errors"
	"net"
	"strings"
	"testing"

	"github.com/go-sql-driver/mysql"

	"github.com/magnetar-io/magnetar/internal/auth"
	"github.com/magnetar-io/magnetar/internal/config"
)

// grants is a Policies that lets the role "reader" consume public/default.
type grants struct{}

func (grants) Tenant(context.Context, string) (auth.TenantPolicy, error) {
	return auth.TenantPolicy{}, nil
}

func (grants) Namespace(_ context.Context, tenant, ns string) (auth.NamespacePolicy, error) {
	if tenant+"/"+ns != "public/default" {
		return auth.NamespacePolicy{}, auth.ErrPolicyNotFound
	}
	return auth.NamespacePolicy{NamespaceAuth: map[string][]string{"reader": {"consume"}}}, nil
}

// TestTokensAuthenticateAndConsumeIsAuthorized: with authentication on, a login needs a
// valid Pulsar token as its password; with authorization on, reading a topic needs the
// consume permission, per table of the statement.
func TestTokensAuthenticateAndConsumeIsAuthorized(t *testing.T) {
	secret := []byte("0123456789abcdef0123456789abcdef")
	acfg := config.DefaultAuthenticationConfig()
	acfg.Enabled = true
	acfg.Providers = []string{"token"}
	acfg.Token.SecretKey = "data:;base64," + base64.StdEncoding.EncodeToString(secret)
	authn, err := auth.NewService(acfg, auth.ServiceOptions{})
	if err != nil {
		t.Fatal(err)
	}
	zcfg := config.DefaultAuthorizationConfig()
	zcfg.Enabled = true
	authz, err := auth.NewAuthorizer(zcfg, grants{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	token := func(role string) string {
		tok, err := auth.CreateToken(secret, "HS256", auth.TokenSpec{Subject: role})
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}
	s, err := New(Options{Config: config.DefaultSQLConfig(), Source: ordersSource(t), Auth: authn, Authz: authz})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = s.Serve(ln) }()
	t.Cleanup(func() { _ = s.Close() })
	open := func(user, password string) *sql.DB {
		mc := mysql.NewConfig()
		mc.Net, mc.Addr, mc.User, mc.Passwd, mc.DBName = "tcp", ln.Addr().String(), user, password, "public/default"
		mc.AllowCleartextPasswords = true
		conn, err := mysql.NewConnector(mc)
		if err != nil {
			t.Fatal(err)
		}
		db := sql.OpenDB(conn)
		t.Cleanup(func() { _ = db.Close() })
		return db
	}
	for name, pw := range map[string]string{"no password": "", "a forged token": token("reader")[:20] + "x.y.z", "a wrong basic password": "secret"} {
		if err := open("reader", pw).Ping(); err == nil || !strings.Contains(err.Error(), "Access denied") {
			t.Errorf("%s: %v, want access denied", name, err)
		}
	}
	reader := open("anything", "token:"+token("reader"))
	if got := queryRows(t, reader, "SELECT count(*) FROM orders WHERE __partition__ = 1"); got[0][0] != "1000" {
		t.Fatalf("reader: %v", got)
	}
	if got := queryRows(t, open("reader", token("reader")), "SELECT count(*) FROM items"); got[0][0] != "7" {
		t.Fatalf("reader with a bare JWT: %v", got)
	}
	other := open("other", "token:"+token("other"))
	for _, q := range []string{"SELECT count(*) FROM orders", "SELECT o.id FROM items i JOIN orders o ON i.__value__ = o.item"} {
		_, err := other.Exec(q)
		var me *mysql.MySQLError
		if !errors.As(err, &me) || me.Number != erTableAccessDenied || !strings.Contains(me.Message, "consume permission") {
			t.Fatalf("%s as other: %v, want error 1142 naming the consume permission", q, err)
		}
	}
}
