package e2e

import (
	"bufio"
	"context"
	"database/sql"
	"encoding/base64"
	byteorder "encoding/binary"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
	_ "github.com/go-sql-driver/mysql"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/magnetar-io/magnetar/internal/auth"
	"github.com/magnetar-io/magnetar/internal/testenv"
)

// TestSQLEndToEnd (issue 22): a standalone process with SQL on a free port and tiered
// storage on the filesystem driver; topics of JSON (partitioned), AVRO and STRING schemas
// published with the official Go client; queried with Go's MySQL driver and Debian's
// mariadb command-line client. The AVRO topic's closed ledgers are offloaded and their
// bookie copies deleted, so its queries read offloaded and bookie ledgers together; the
// pulsar_sql_* counters show that a time range is found by search, not by a scan.
func TestSQLEndToEnd(t *testing.T) {
	mariadb := testenv.DebianProgram(t, "mariadb", "mariadb-client")
	dir := t.TempDir()
	p, broker, httpAddr := startStandalone(t, dir,
		"--functions-worker=false",
		"--managed-ledger-offload-driver", "filesystem",
		"--file-system-uri", "file://"+dir+"/offload",
		"--managed-ledger-offload-auto-trigger-size-threshold-bytes", "0",
		"--managed-ledger-offload-deletion-lag-ms", "0",
		"--managed-ledger-max-entries-per-ledger", "20",
		"--managed-ledger-min-ledger-rollover-time-minutes", "0",
		"--retention-check-interval-in-seconds", "1")
	sqlAddr := sqlAddrOf(t, p)

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	c, err := pulsar.NewClient(pulsar.ClientOptions{URL: "pulsar://" + broker, OperationTimeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()

	admin := func(method, path, body string) {
		t.Helper()
		req, _ := http.NewRequest(method, "http://"+httpAddr+path, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode/100 != 2 {
			t.Fatalf("%s %s: %s", method, path, resp.Status)
		}
	}
	// Nothing subscribes: infinite retention keeps the data for the queries.
	admin(http.MethodPost, "/admin/v2/namespaces/public/default/retention", `{"retentionTimeInMinutes":-1,"retentionSizeInMB":-1}`)
	// orders: 3 partitions, JSON schema, batched, keys and properties.
	admin(http.MethodPut, "/admin/v2/persistent/public/default/orders/partitions", "3")
	type order struct {
		ID    int64   `json:"id"`
		Item  string  `json:"item"`
		Qty   int32   `json:"qty"`
		Price float64 `json:"price"`
	}
	const orderDef = `{"type":"record","name":"Order","fields":[{"name":"id","type":"long"},{"name":"item","type":"string"},{"name":"qty","type":"int"},{"name":"price","type":"double"}]}`
	prod, err := c.CreateProducer(pulsar.ProducerOptions{Topic: "persistent://public/default/orders", Schema: pulsar.NewJSONSchema(orderDef, nil),
		BatchingMaxMessages: 50, BatchingMaxPublishDelay: 5 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3000 {
		prod.SendAsync(ctx, &pulsar.ProducerMessage{Key: "k" + strconv.Itoa(i%30), Properties: map[string]string{"src": "e2e"},
			Value: &order{ID: int64(i), Item: "item-" + strconv.Itoa(i%7), Qty: int32(i % 5), Price: float64(i%3) + 0.5}},
			func(_ pulsar.MessageID, _ *pulsar.ProducerMessage, err error) {
				if err != nil {
					t.Errorf("send: %v", err)
				}
			})
	}
	if err := prod.FlushWithCtx(ctx); err != nil {
		t.Fatal(err)
	}
	prod.Close()

	// names: STRING schema, one message per item, the item's display name as the key.
	np, err := c.CreateProducer(pulsar.ProducerOptions{Topic: "persistent://public/default/names", Schema: pulsar.NewStringSchema(nil), DisableBatching: true})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 7 {
		if _, err := np.Send(ctx, &pulsar.ProducerMessage{Key: "Name " + strconv.Itoa(i), Value: "item-" + strconv.Itoa(i)}); err != nil {
			t.Fatal(err)
		}
	}
	np.Close()

	// durations: PROTOBUF_NATIVE (a well-known message type as the schema).
	dp, err := c.CreateProducer(pulsar.ProducerOptions{Topic: "persistent://public/default/durations",
		Schema: pulsar.NewProtoNativeSchemaWithMessage(&durationpb.Duration{}, nil)})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		dp.SendAsync(ctx, &pulsar.ProducerMessage{Value: &durationpb.Duration{Seconds: int64(i), Nanos: int32(10 * i)}}, nil)
	}
	if err := dp.FlushWithCtx(ctx); err != nil {
		t.Fatal(err)
	}
	dp.Close()

	// events: AVRO, not batched, 300 messages in ledgers of 20 entries. The middle 10 are
	// published between two instants the test notes, for the time-range query.
	type event struct {
		N    int64  `avro:"n"`
		Kind string `avro:"kind"`
	}
	const eventDef = `{"type":"record","name":"Event","fields":[{"name":"n","type":"long"},{"name":"kind","type":"string"}]}`
	ep, err := c.CreateProducer(pulsar.ProducerOptions{Topic: "persistent://public/default/events", Schema: pulsar.NewAvroSchema(eventDef, nil), DisableBatching: true})
	if err != nil {
		t.Fatal(err)
	}
	var from, to time.Time
	nextMilli := func() time.Time { // the clock past the current millisecond (ordering, not timing)
		now := time.Now()
		for time.Now().UnixMilli() <= now.UnixMilli() {
			time.Sleep(time.Millisecond)
		}
		return time.UnixMilli(time.Now().UnixMilli())
	}
	for i := range 300 {
		if i == 200 {
			from = nextMilli()
		}
		if i == 210 {
			to = nextMilli()
			nextMilli()
		}
		if _, err := ep.Send(ctx, &pulsar.ProducerMessage{Value: &event{N: int64(i), Kind: []string{"a", "b", "c"}[i%3]}}); err != nil {
			t.Fatal(err)
		}
	}
	ep.Close()

	// Wait until events' closed ledgers are offloaded and their bookie copies deleted.
	waitOffload(t, 3*time.Minute, func() bool {
		st := internalStats(t, httpAddr, "persistent://public/default/events")
		off := 0
		for _, l := range st.Ledgers {
			if l.Offloaded {
				off++
			}
		}
		return off >= 10 && strings.Count(p.log(), "deleted the bookie copy of an offloaded ledger") >= 10
	})

	db, err := sql.Open("mysql", "e2e@tcp("+sqlAddr+")/public%2Fdefault?parseTime=true&loc=UTC")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	check := func(q string, want ...[]string) {
		t.Helper()
		if got := sqlRows(t, db, q); !reflect.DeepEqual(got, want) && !(len(got) == 0 && len(want) == 0) {
			t.Fatalf("%s:\n got %q\nwant %q", q, got, want)
		}
	}
	check("SHOW TABLES", []string{"durations"}, []string{"events"}, []string{"names"}, []string{"orders"})
	check("SELECT count(*), sum(seconds), max(nanos) FROM durations", []string{"5", "10", "40"})
	check("SELECT count(*), sum(qty), count(DISTINCT __partition__) FROM orders", []string{"3000", "6000", "3"})
	check("SELECT item, count(*) FROM orders WHERE qty = 4 GROUP BY item ORDER BY item LIMIT 2", []string{"item-0", "86"}, []string{"item-1", "85"})
	check("SELECT id, price FROM orders ORDER BY id DESC LIMIT 2", []string{"2999", "2.5"}, []string{"2998", "1.5"})
	check("SELECT n.__key__, count(*) FROM orders o JOIN names n ON o.item = n.__value__ WHERE o.id < 14 GROUP BY n.__key__ ORDER BY n.__key__ LIMIT 3",
		[]string{"Name 0", "2"}, []string{"Name 1", "2"}, []string{"Name 2", "2"})
	check("SELECT __key__, __properties__, __producer_name__ IS NOT NULL, __publish_time__ > '2020-01-01' FROM orders WHERE id = 5", []string{"k5", `{"src":"e2e"}`, "1", "1"})
	// events spans offloaded and bookie ledgers: every message, in order.
	check("SELECT count(*), min(n), max(n), sum(n) FROM events", []string{"300", "0", "299", "44850"})
	check("SELECT kind, count(*) FROM events GROUP BY kind ORDER BY kind", []string{"a", "100"}, []string{"b", "100"}, []string{"c", "100"})

	// A 10-message time range of events: found by publish-time search, so it reads a
	// handful of entries, not 300.
	before := sqlCounters(t, httpAddr)
	check(fmt.Sprintf("SELECT count(*), min(n), max(n) FROM events WHERE __publish_time__ >= '%s' AND __publish_time__ < '%s'",
		from.UTC().Format("2006-01-02 15:04:05.000"), to.UTC().Format("2006-01-02 15:04:05.000")), []string{"10", "200", "209"})
	after := sqlCounters(t, httpAddr)
	entries, searches := after["pulsar_sql_scanned_entries_total"]-before["pulsar_sql_scanned_entries_total"],
		after["pulsar_sql_publish_time_search_reads_total"]-before["pulsar_sql_publish_time_search_reads_total"]
	if entries > 12 || searches == 0 || searches > 40 {
		t.Fatalf("time range read %v entries after %v search reads; want at most 12 after a search", entries, searches)
	}

	// Errors: an unknown topic is an unknown table; bad SQL names its position.
	for q, want := range map[string]string{
		"SELECT * FROM nope":    "table not found: nope",
		"SELEC count(*) FROM x": "syntax error at position",
		"DELETE FROM orders":    "",
	} {
		if _, err := db.Exec(q); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want an error with %q", q, err, want)
		}
	}

	// The mariadb command-line client from Debian.
	host, port, _ := strings.Cut(sqlAddr, ":")
	out, err := exec.Command(mariadb, "--host", host, "--port", port, "--user", "e2e", "--skip-ssl", "--batch",
		"--execute", "SHOW SCHEMAS; DESCRIBE `public/default`.events; SELECT kind, count(*) AS n FROM `public/default`.events WHERE n >= 150 GROUP BY kind ORDER BY kind").CombinedOutput()
	if err != nil {
		t.Fatalf("mariadb: %v\n%s", err, out)
	}
	for _, want := range []string{"public/default\n", "n\tbigint", "kind\t", "__publish_time__\tdatetime", "__message_id__\t", "a\t50\nb\t50\nc\t50\n"} {
		if !strings.Contains(string(out), want) {
			t.Fatalf("mariadb output lacks %q:\n%s", want, out)
		}
	}

	// magnetar sql -e prints a table.
	out, err = exec.Command(binary, "sql", "--server", sqlAddr, "-e", "SELECT count(*) AS n FROM orders").CombinedOutput()
	if err != nil {
		t.Fatalf("magnetar sql: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "| n    |\n") || !strings.Contains(string(out), "| 3000 |\n") || !strings.Contains(string(out), "1 row in set") {
		t.Fatalf("magnetar sql -e:\n%s", out)
	}
}

// sqlAddrOf is the SQL address the standalone's ready line names.
func sqlAddrOf(t *testing.T, p *proc) string {
	t.Helper()
	sc := bufio.NewScanner(strings.NewReader(p.log()))
	for sc.Scan() {
		if _, rest, ok := strings.Cut(sc.Text(), `"sql":"`); ok && strings.Contains(sc.Text(), "magnetar standalone ready") {
			addr, _, _ := strings.Cut(rest, `"`)
			if addr != "" {
				return addr
			}
		}
	}
	t.Fatalf("no sql address in the ready line:\n%s", p.log())
	return ""
}

func sqlRows(t testing.TB, db *sql.DB, q string) [][]string {
	t.Helper()
	rows, err := db.Query(q)
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	defer rows.Close()
	cols, _ := rows.Columns()
	var out [][]string
	for rows.Next() {
		vals := make([]sql.NullString, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			t.Fatal(err)
		}
		row := make([]string, len(cols))
		for i, v := range vals {
			row[i] = "NULL"
			if v.Valid {
				row[i] = v.String
			}
		}
		out = append(out, row)
	}
	if err := rows.Err(); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return out
}

// sqlCounters reads the pulsar_sql_* counters from /metrics.
func sqlCounters(t testing.TB, httpAddr string) map[string]float64 {
	t.Helper()
	resp, err := http.Get("http://" + httpAddr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	out := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		name, val, ok := strings.Cut(sc.Text(), " ")
		if ok && strings.HasPrefix(name, "pulsar_sql_") {
			if f, err := strconv.ParseFloat(val, 64); err == nil {
				out[name] = f
			}
		}
	}
	return out
}

// TestSQLWorkerRole: `magnetar sql-worker` on its own, reading a standalone's topics
// through the shared metadata store and the bookie, with its own /metrics.
func TestSQLWorkerRole(t *testing.T) {
	dir := t.TempDir()
	mdPort := freeTCPPort(t)
	_, rec := startProc(t, "magnetar standalone ready", os.Environ(), "standalone", "--log-format", "json", "--data-dir", dir,
		"--metadata-store", "etcd", "--metadata-listen", "http://127.0.0.1:"+strconv.Itoa(mdPort), "--metadata-peer", "http://127.0.0.1:0",
		"--bookie-address", "127.0.0.1:0", "--bind-address", "127.0.0.1", "--port", "0", "--http-port", "0",
		"--functions-worker=false", "--sql=false")
	c, err := pulsar.NewClient(pulsar.ClientOptions{URL: "pulsar://" + trimScheme(rec["broker"]), OperationTimeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	prod, err := c.CreateProducer(pulsar.ProducerOptions{Topic: "persistent://public/default/worker", Schema: pulsar.NewInt64Schema(nil)})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	// The payload is given as bytes: Pulsar's INT64 is big-endian (Java's LongSchema, what
	// Pulsar SQL decodes); the Go client's Int64Schema writes little-endian.
	be := func(v int64) []byte { return byteorder.BigEndian.AppendUint64(nil, uint64(v)) }
	for i := range 500 {
		prod.SendAsync(ctx, &pulsar.ProducerMessage{Payload: be(int64(i))}, func(_ pulsar.MessageID, _ *pulsar.ProducerMessage, err error) {
			if err != nil {
				t.Errorf("send: %v", err)
			}
		})
	}
	if err := prod.FlushWithCtx(ctx); err != nil {
		t.Fatal(err)
	}
	// The worker is not the owner: it sees up to the last confirmed entry the bookies know,
	// which the next add carries (BookKeeper's LAC piggyback, as for Pulsar SQL). One more
	// message, sent after every other was acknowledged, confirms all of them.
	if _, err := prod.Send(ctx, &pulsar.ProducerMessage{Payload: be(1_000_000)}); err != nil {
		t.Fatal(err)
	}
	prod.Close()

	_, wrec := startProc(t, "magnetar sql-worker ready", os.Environ(), "sql-worker", "--log-format", "json",
		"--metadata-url", "etcd://127.0.0.1:"+strconv.Itoa(mdPort), "--bind-address", "127.0.0.1", "--sql-port", "0", "--http-port", "0")
	db, err := sql.Open("mysql", "e2e@tcp("+fmt.Sprint(wrec["sql"])+")/public%2Fdefault")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if got := sqlRows(t, db, "SELECT count(*), sum(__value__), max(__sequence_id__) FROM worker WHERE __value__ < 1000000"); !reflect.DeepEqual(got, [][]string{{"500", "124750", "499"}}) {
		t.Fatalf("sql-worker read %v", got)
	}
	if m := sqlCounters(t, trimScheme(wrec["http"])); m["pulsar_sql_scanned_rows_total"] < 500 {
		t.Fatalf("sql-worker /metrics: %v", m)
	}

	// A second worker with a scan limit cancels the statement over it, naming the key; what
	// fits in the limit still runs, and the first worker is undisturbed.
	_, lrec := startProc(t, "magnetar sql-worker ready", os.Environ(), "sql-worker", "--log-format", "json",
		"--metadata-url", "etcd://127.0.0.1:"+strconv.Itoa(mdPort), "--bind-address", "127.0.0.1", "--sql-port", "0", "--http-port", "-1",
		"--sql-max-scanned-rows", "100")
	ldb, err := sql.Open("mysql", "e2e@tcp("+fmt.Sprint(lrec["sql"])+")/public%2Fdefault")
	if err != nil {
		t.Fatal(err)
	}
	defer ldb.Close()
	if _, err := ldb.Exec("SELECT count(*) FROM worker"); err == nil || !strings.Contains(err.Error(), "1317") || !strings.Contains(err.Error(), "sqlMaxScannedRows is 100") {
		t.Fatalf("over the limit: %v", err)
	}
	if got := sqlRows(t, ldb, "SELECT count(*) FROM worker WHERE __partition__ = 3"); got[0][0] != "0" {
		t.Fatalf("a statement that reads nothing: %v", got)
	}
	if got := sqlRows(t, db, "SELECT count(*) FROM worker WHERE __value__ < 1000000"); got[0][0] != "500" {
		t.Fatalf("the first worker after the second's refusal: %v", got)
	}

	// A worker with token authentication and authorization, TLS with the broker's keys and
	// required (sqlRequireSecureTransport): the mariadb client logs in over TLS with a token
	// as its clear-text password; a role granted consume on the namespace reads and lists
	// the topic, another is refused per table and lists nothing; plain TCP is refused.
	secret := []byte("0123456789abcdef0123456789abcdef")
	token := func(role string) string {
		tok, err := auth.CreateToken(secret, "HS256", auth.TokenSpec{Subject: role})
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}
	req, _ := http.NewRequest(http.MethodPost, "http://"+trimScheme(rec["http"])+"/admin/v2/namespaces/public/default/permissions/reader", strings.NewReader(`["consume"]`))
	req.Header.Set("Content-Type", "application/json")
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode/100 != 2 {
		t.Fatalf("grant: %v %v", resp, err)
	}
	ca, err := auth.NewCA(filepath.Join(t.TempDir(), "ca"), "e2e CA", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := ca.Issue(auth.IssueOptions{Name: "sql", Hosts: []string{"127.0.0.1", "localhost"}})
	if err != nil {
		t.Fatal(err)
	}
	_, arec := startProc(t, "magnetar sql-worker ready", os.Environ(), "sql-worker", "--log-format", "json",
		"--metadata-url", "etcd://127.0.0.1:"+strconv.Itoa(mdPort), "--bind-address", "127.0.0.1", "--sql-port", "0", "--http-port", "-1",
		"--authentication-enabled", "--authentication-providers", "token,tls",
		"--token-secret-key", "data:;base64,"+base64.StdEncoding.EncodeToString(secret), "--authorization-enabled",
		"--tls-certificate-file-path", cert.CertFile, "--tls-key-file-path", cert.KeyFile, "--tls-trust-certs-file-path", ca.CertFile,
		"--sql-require-secure-transport")
	sqlAddr := fmt.Sprint(arec["sql"])
	host, port, _ := strings.Cut(sqlAddr, ":")
	mariadb := testenv.DebianProgram(t, "mariadb", "mariadb-client")
	secure := []string{"--ssl", "--ssl-ca", ca.CertFile, "--ssl-verify-server-cert"}
	query := func(user, password, q string, transport ...string) (string, error) {
		args := append([]string{"--host", host, "--port", port, "--user", user, "--password=" + password}, transport...)
		out, err := exec.Command(mariadb, append(args, "--batch", "--skip-column-names", "--execute", q)...).CombinedOutput()
		return string(out), err
	}
	const count = "SELECT count(*) FROM `public/default`.worker WHERE __value__ < 1000000"
	if out, err := query("reader", "token:"+token("reader"), count, secure...); err != nil || out != "500\n" {
		t.Fatalf("reader: %v %q", err, out)
	}
	if out, err := query("reader", "token:"+token("reader"), "SHOW TABLES FROM `public/default`", secure...); err != nil || !strings.Contains(out, "worker\n") {
		t.Fatalf("reader's SHOW TABLES: %v %q", err, out)
	}
	// other may consume nothing in public/default: to it the namespace is unknown.
	if out, err := query("other", "token:"+token("other"), "SHOW TABLES FROM `public/default`", secure...); err == nil || !strings.Contains(out, "ERROR 1049") {
		t.Fatalf("other's SHOW TABLES: %v %q, want error 1049", err, out)
	}
	if out, err := query("other", "token:"+token("other"), count, secure...); err == nil || !strings.Contains(out, "ERROR 1049") || !strings.Contains(out, "Unknown database 'public/default'") {
		t.Fatalf("other: %v %q, want error 1049", err, out)
	}
	if out, err := query("reader", "token:"+token("reader")[:30], count, secure...); err == nil || !strings.Contains(out, "Access denied") {
		t.Fatalf("a bad token: %v %q, want access denied", err, out)
	}
	if out, err := query("reader", "token:"+token("reader"), count, "--skip-ssl"); err == nil || !strings.Contains(out, "SSL/TLS") {
		t.Fatalf("plain TCP with sqlRequireSecureTransport: %v %q, want a refusal naming TLS", err, out)
	}
	// magnetar sql over TLS (Go's driver), trusting the CA; without --tls it is refused.
	out, err := exec.Command(binary, "sql", "--server", sqlAddr, "--token", token("reader"), "--tls-trust-cert-path", ca.CertFile,
		"--tls-enable-hostname-verification", "-e", count).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "| 500      |") {
		t.Fatalf("magnetar sql --tls-trust-cert-path: %v\n%s", err, out)
	}
	if out, err := exec.Command(binary, "sql", "--server", sqlAddr, "--token", token("reader"), "-e", count).CombinedOutput(); err == nil || !strings.Contains(string(out), "SSL/TLS") {
		t.Fatalf("magnetar sql without TLS: %v\n%s", err, out)
	}
	// With the tls provider on, a trusted client certificate and no password log in as the
	// certificate's common name, whatever user name is sent: magnetar sql --tls-cert-file and
	// the mariadb client with --ssl-cert.
	readerCert, err := ca.Issue(auth.IssueOptions{Name: "reader-client", CommonName: "reader"})
	if err != nil {
		t.Fatal(err)
	}
	otherCert, err := ca.Issue(auth.IssueOptions{Name: "other-client", CommonName: "other"})
	if err != nil {
		t.Fatal(err)
	}
	certCLI := func(c auth.Issued) ([]byte, error) {
		return exec.Command(binary, "sql", "--server", sqlAddr, "--user", "whoever", "--tls-trust-cert-path", ca.CertFile,
			"--tls-cert-file", c.CertFile, "--tls-key-file", c.KeyFile, "-e", count).CombinedOutput()
	}
	if out, err := certCLI(readerCert); err != nil || !strings.Contains(string(out), "| 500      |") {
		t.Fatalf("magnetar sql --tls-cert-file (CN reader): %v\n%s", err, out)
	}
	if out, err := certCLI(otherCert); err == nil || !strings.Contains(string(out), "1049") {
		t.Fatalf("magnetar sql --tls-cert-file (CN other): %v\n%s, want error 1049", err, out)
	}
	if out, err := query("whoever", "", count, append(secure, "--ssl-cert", readerCert.CertFile, "--ssl-key", readerCert.KeyFile)...); err != nil || out != "500\n" {
		t.Fatalf("mariadb --ssl-cert (CN reader): %v %q", err, out)
	}
}
