package sql

import (
	"context"
	"crypto/tls"
	"database/sql"
	"encoding/base64"
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"
	"testing"

	"github.com/go-sql-driver/mysql"

	"github.com/magnetar-io/magnetar/internal/auth"
	"github.com/magnetar-io/magnetar/internal/config"
	"github.com/magnetar-io/magnetar/internal/schema"
)

// grants is a Policies: the role "reader" may consume all of public/default, "items-reader"
// only its topic items, "boss" administers tenant other; other/ns grants nothing.
type grants struct{}

func (grants) Tenant(_ context.Context, tenant string) (auth.TenantPolicy, error) {
	if tenant == "other" {
		return auth.TenantPolicy{AdminRoles: []string{"boss"}}, nil
	}
	return auth.TenantPolicy{}, nil
}

func (grants) Namespace(_ context.Context, tenant, ns string) (auth.NamespacePolicy, error) {
	switch tenant + "/" + ns {
	case "public/default":
		return auth.NamespacePolicy{NamespaceAuth: map[string][]string{"reader": {"consume"}},
			DestinationAuth: map[string]map[string][]string{"persistent://public/default/items": {"items-reader": {"consume"}}}}, nil
	case "other/ns":
		return auth.NamespacePolicy{}, nil
	}
	return auth.NamespacePolicy{}, auth.ErrPolicyNotFound
}

// authServer serves src with token authentication and authorization on ("admin" is a
// superuser); open logs in with a password (into public/default, or db when given), token
// mints a role's token.
func authServer(t *testing.T, src Source) (open func(user, password string, db ...string) *sql.DB, token func(role string) string) {
	t.Helper()
	addr, token := secureServer(t, src, nil)
	open = func(user, password string, dbName ...string) *sql.DB {
		db := "public/default"
		if len(dbName) > 0 {
			db = dbName[0]
		}
		return dial(t, addr, user, password, db, nil)
	}
	return open, token
}

// secureServer serves src on a loopback port with token authentication (and, with stls,
// TLS and the tls provider) and authorization over grants on ("admin" is a superuser); it
// returns the address and a minter of roles' tokens.
func secureServer(t *testing.T, src Source, stls *auth.ServerTLS) (addr string, token func(role string) string) {
	t.Helper()
	secret := []byte("0123456789abcdef0123456789abcdef")
	acfg := config.DefaultAuthenticationConfig()
	acfg.Enabled = true
	acfg.Providers = []string{"token"}
	if stls != nil {
		acfg.Providers = append(acfg.Providers, "tls")
	}
	acfg.Token.SecretKey = "data:;base64," + base64.StdEncoding.EncodeToString(secret)
	authn, err := auth.NewService(acfg, auth.ServiceOptions{})
	if err != nil {
		t.Fatal(err)
	}
	zcfg := config.DefaultAuthorizationConfig()
	zcfg.Enabled = true
	zcfg.SuperUserRoles = []string{"admin"}
	authz, err := auth.NewAuthorizer(zcfg, grants{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	token = func(role string) string {
		tok, err := auth.CreateToken(secret, "HS256", auth.TokenSpec{Subject: role})
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}
	s, err := New(Options{Config: config.DefaultSQLConfig(), Source: src, Auth: authn, Authz: authz, TLS: stls})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = s.Serve(ln) }()
	t.Cleanup(func() { _ = s.Close() })
	return ln.Addr().String(), token
}

// dial opens a database/sql handle on Go's MySQL driver (clear-text passwords allowed, TLS
// when tc is set).
func dial(t *testing.T, addr, user, password, db string, tc *tls.Config) *sql.DB {
	t.Helper()
	mc := mysql.NewConfig()
	mc.Net, mc.Addr, mc.User, mc.Passwd, mc.DBName, mc.TLS = "tcp", addr, user, password, db, tc
	mc.AllowCleartextPasswords = true
	conn, err := mysql.NewConnector(mc)
	if err != nil {
		t.Fatal(err)
	}
	h := sql.OpenDB(conn)
	t.Cleanup(func() { _ = h.Close() })
	return h
}

// TestTokensAuthenticateAndConsumeIsAuthorized: with authentication on, a login needs a
// valid Pulsar token as its password; with authorization on, reading a topic needs the
// consume permission, per table of the statement.
func TestTokensAuthenticateAndConsumeIsAuthorized(t *testing.T) {
	open, token := authServer(t, ordersSource(t))
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
	// items-reader sees public/default (it may consume items there) but not orders.
	other := open("items-reader", "token:"+token("items-reader"))
	for _, q := range []string{"SELECT count(*) FROM orders", "SELECT o.id FROM items i JOIN orders o ON i.__value__ = o.item"} {
		_, err := other.Exec(q)
		var me *mysql.MySQLError
		if !errors.As(err, &me) || me.Number != erTableAccessDenied || !strings.Contains(me.Message, "consume permission") {
			t.Fatalf("%s as items-reader: %v, want error 1142 naming the consume permission", q, err)
		}
	}
}

// TestListingsShowOnlyConsumableTopics: SHOW SCHEMAS, SHOW TABLES and information_schema
// list to each role only the namespaces and topics it may consume; DESCRIBE of a topic it
// may not consume is error 1142, like SELECT.
func TestListingsShowOnlyConsumableTopics(t *testing.T) {
	src := ordersSource(t)
	src.add(t, "other/ns/secret", TopicInfo{Schema: schema.Schema{Type: schema.String}}, -1, 0, 3,
		[]msg{{payload: []byte("s"), pub: 1_700_000_000_000}})
	open, token := authServer(t, src)
	list := func(db *sql.DB, q string) string {
		t.Helper()
		var me *mysql.MySQLError
		if _, err := db.Exec(q); errors.As(err, &me) {
			return fmt.Sprintf("error %d", me.Number)
		}
		var out []string
		for _, r := range queryRows(t, db, q) {
			if strings.Contains(r[0], "/") || !strings.HasPrefix(q, "SHOW SCHEMAS") { // not information_schema, mysql
				out = append(out, strings.Join(r, "."))
			}
		}
		return strings.Join(out, " ")
	}
	const (
		schemas = "SELECT schema_name FROM information_schema.schemata WHERE schema_name LIKE '%/%' ORDER BY 1"
		tables  = "SELECT table_schema, table_name FROM information_schema.tables WHERE table_schema LIKE '%/%' ORDER BY 1, 2"
		columns = "SELECT DISTINCT table_name FROM information_schema.columns WHERE table_schema LIKE '%/%' ORDER BY 1"
	)
	for _, c := range []struct {
		role                             string
		showSchemas, showTables, infoTab string
	}{
		{"admin", "other/ns public/default", "items orders", "other/ns.secret public/default.items public/default.orders"},
		{"reader", "public/default", "items orders", "public/default.items public/default.orders"},
		{"items-reader", "public/default", "items", "public/default.items"},
		{"boss", "other/ns", "error 1049", "other/ns.secret"},
		{"nobody", "", "error 1049", ""},
	} {
		db := open(c.role, "token:"+token(c.role), "")
		if got := list(db, "SHOW SCHEMAS"); got != c.showSchemas {
			t.Errorf("%s: SHOW SCHEMAS = %q, want %q", c.role, got, c.showSchemas)
		}
		if got := list(db, schemas); got != c.showSchemas {
			t.Errorf("%s: information_schema.schemata = %q, want %q", c.role, got, c.showSchemas)
		}
		if got := list(db, "SHOW TABLES FROM `public/default`"); got != c.showTables {
			t.Errorf("%s: SHOW TABLES = %q, want %q", c.role, got, c.showTables)
		}
		if got := list(db, tables); got != c.infoTab {
			t.Errorf("%s: information_schema.tables = %q, want %q", c.role, got, c.infoTab)
		}
		var names []string
		for _, full := range strings.Fields(c.infoTab) {
			names = append(names, full[strings.IndexByte(full, '.')+1:])
		}
		slices.Sort(names)
		if got := list(db, columns); got != strings.Join(names, " ") {
			t.Errorf("%s: information_schema.columns tables = %q, want %q", c.role, got, names)
		}
	}
	items := open("items-reader", "token:"+token("items-reader"))
	if got := queryRows(t, items, "SELECT count(*) FROM items"); got[0][0] != "7" {
		t.Fatalf("items-reader reads items: %v", got)
	}
	for _, q := range []string{"DESCRIBE orders", "SELECT count(*) FROM orders"} {
		_, err := items.Exec(q)
		var me *mysql.MySQLError
		if !errors.As(err, &me) || me.Number != erTableAccessDenied {
			t.Errorf("%s as items-reader: %v, want error 1142", q, err)
		}
	}
}

// TestHiddenNamespaceIsAnUnknownDatabase: a namespace the role may not see answers exactly
// as one that does not exist (MySQL's 1049, "Unknown database"), whether named in the
// handshake, by USE, SHOW TABLES FROM or a qualified table, so its existence does not leak;
// what the role may see works as before.
func TestHiddenNamespaceIsAnUnknownDatabase(t *testing.T) {
	src := ordersSource(t)
	src.add(t, "other/ns/secret", TopicInfo{Schema: schema.Schema{Type: schema.String}}, -1, 0, 3,
		[]msg{{payload: []byte("s"), pub: 1_700_000_000_000}})
	open, token := authServer(t, src)
	// answer runs q and gives its MySQL error, with the namespace's name replaced by NS, or
	// "ok".
	answer := func(db *sql.DB, q, ns string) string {
		t.Helper()
		_, err := db.Exec(strings.ReplaceAll(q, "NS", ns))
		if err == nil {
			return "ok"
		}
		var me *mysql.MySQLError
		if !errors.As(err, &me) {
			t.Fatalf("%s: %v, not a MySQL error", q, err)
		}
		return fmt.Sprintf("%d %s %s", me.Number, me.SQLState, strings.ReplaceAll(me.Message, ns, "NS"))
	}
	statements := []string{"USE `NS`", "SHOW TABLES FROM `NS`", "SELECT * FROM `NS`.secret", "SELECT count(*) FROM `NS`.orders",
		"DESCRIBE `NS`.secret"}
	for _, role := range []string{"items-reader", "nobody"} {
		db := open(role, "token:"+token(role), "")
		for _, q := range statements {
			missing, hidden := answer(db, q, "no/such"), answer(db, q, "other/ns")
			if want := "1049 42000 Unknown database 'NS'"; missing != want {
				t.Errorf("%s as %s on a namespace that does not exist: %q, want %q", q, role, missing, want)
			}
			if hidden != missing {
				t.Errorf("%s as %s on a hidden namespace: %q, but %q where none exists", q, role, hidden, missing)
			}
		}
		// Named in the handshake (mysql -D, a DSN's database).
		var errs [2]string
		for i, ns := range []string{"no/such", "other/ns"} {
			err := open(role, "token:"+token(role), ns).Ping()
			var me *mysql.MySQLError
			if !errors.As(err, &me) {
				t.Fatalf("%s logging into %s: %v, want a MySQL error", role, ns, err)
			}
			errs[i] = fmt.Sprintf("%d %s", me.Number, strings.ReplaceAll(me.Message, ns, "NS"))
		}
		if errs[0] != "1049 Unknown database 'NS'" || errs[1] != errs[0] {
			t.Errorf("%s logging into a missing and a hidden namespace: %q", role, errs)
		}
	}
	// The tenant's admin sees other/ns; items-reader its namespace.
	for _, q := range []string{"USE `NS`", "SHOW TABLES FROM `NS`", "SELECT * FROM `NS`.secret"} {
		if got := answer(open("boss", "token:"+token("boss"), "other/ns"), q, "other/ns"); got != "ok" {
			t.Errorf("%s as boss: %s", q, got)
		}
	}
	if got := answer(open("items-reader", "token:"+token("items-reader")), "USE `NS`", "public/default"); got != "ok" {
		t.Errorf("USE public/default as items-reader: %s", got)
	}
}
