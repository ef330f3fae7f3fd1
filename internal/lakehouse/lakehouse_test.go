package lakehouse_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/iceberg-go/catalog/rest"
	_ "github.com/apache/iceberg-go/io/gocloud/s3" // s3:// for the test's reads (the product has its own IO)
	"github.com/apache/iceberg-go/table"
	"github.com/apache/pulsar-client-go/pulsar"
	plog "github.com/apache/pulsar-client-go/pulsar/log"

	"github.com/magnetar-io/magnetar/internal/config"
	"github.com/magnetar-io/magnetar/internal/standalone"
	"github.com/magnetar-io/magnetar/internal/testenv"
)

// testDeadline bounds waits that only catch hangs.
var testDeadline = 3 * time.Minute

var quiet = plog.NewLoggerWithSlog(slog.New(slog.DiscardHandler))

// env is a standalone with the lakehouse writing into a real S3-compatible server.
type env struct {
	sa     *standalone.Standalone
	s3     *testenv.S3Server
	bucket string
}

func startEnv(t *testing.T, tune func(*config.StandaloneConfig)) *env {
	t.Helper()
	s3 := testenv.StartS3(t)
	e := &env{s3: s3, bucket: "lake"}
	s3.CreateBucket(t, e.bucket)
	cfg := config.DefaultStandaloneConfig()
	cfg.DataDir = t.TempDir()
	cfg.MetadataListenClient = "http://127.0.0.1:0"
	cfg.MetadataListenPeer = "http://127.0.0.1:0"
	cfg.BookieAddress = "127.0.0.1:0"
	cfg.Broker.BindAddress = "127.0.0.1"
	cfg.Broker.ServicePort = 0
	cfg.Broker.WebServicePort = 0
	ic := &cfg.Broker.Iceberg
	ic.Enabled = true
	ic.Warehouse = "s3://" + e.bucket + "/warehouse"
	ic.S3Endpoint = s3.Endpoint
	ic.S3Region = s3.Region
	ic.S3AccessKeyID, ic.S3SecretAccessKey = s3.AccessKey, s3.SecretKey
	ic.VendCredentials = true
	ic.CommitIntervalSeconds = 1
	ic.ScanIntervalSeconds = 1
	if tune != nil {
		tune(&cfg)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var logger *slog.Logger
	if os.Getenv("LAKEHOUSE_TEST_LOG") != "" {
		logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	sa, err := standalone.Start(ctx, cfg, logger)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		_ = sa.Close(ctx)
	})
	e.sa = sa
	return e
}

func (e *env) url(path string) string { return "http://" + e.sa.HTTPAddr() + path }

func (e *env) do(t *testing.T, method, path, body string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(method, e.url(path), strings.NewReader(body))
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

func (e *env) client(t *testing.T) pulsar.Client {
	t.Helper()
	c, err := pulsar.NewClient(pulsar.ClientOptions{URL: "pulsar://" + e.sa.BrokerAddr(), OperationTimeout: 30 * time.Second, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

// icebergStats returns the topic's icebergStats.
func (e *env) icebergStats(t *testing.T, topic string) map[string]any {
	t.Helper()
	code, body := e.do(t, "GET", "/admin/v2/persistent/"+topic+"/icebergStats", "")
	if code != 200 {
		return nil
	}
	var v map[string]any
	if err := json.Unmarshal([]byte(body), &v); err != nil {
		t.Fatalf("icebergStats: %v: %s", err, body)
	}
	return v
}

// waitCommitted waits until every partition of the topic listed in want has committed
// rows totalling n.
func (e *env) waitRows(t *testing.T, topic string, n int64) map[string]any {
	t.Helper()
	deadline := time.Now().Add(testDeadline)
	var last map[string]any
	for time.Now().Before(deadline) {
		last = e.icebergStats(t, topic)
		var rows int64
		if last != nil {
			ps, _ := last["partitions"].([]any)
			for _, p := range ps {
				rows += int64(p.(map[string]any)["rowsCommitted"].(float64))
			}
		}
		if rows >= n {
			return last
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatalf("%s: %d rows not committed in time; stats %v", topic, n, last)
	return nil
}

const avroSchema = `{"type":"record","name":"Order","namespace":"test","fields":[
 {"name":"id","type":"long"},{"name":"item","type":"string"},{"name":"price","type":["null","double"],"default":null}]}`

type order struct {
	ID    int64    `avro:"id" json:"id"`
	Item  string   `avro:"item" json:"item"`
	Price *float64 `avro:"price" json:"price"`
}

func TestAvroTopicBecomesTable(t *testing.T) {
	e := startEnv(t, nil)
	if code, body := e.do(t, "POST", "/admin/v2/namespaces/public/default/icebergPolicies", `{"enabled":true}`); code != 204 {
		t.Fatalf("set policy: %d %s", code, body)
	}
	if code, body := e.do(t, "GET", "/admin/v2/namespaces/public/default/icebergPolicies", ""); code != 200 || !strings.Contains(body, `"enabled":true`) {
		t.Fatalf("get policy: %d %s", code, body)
	}
	if code, _ := e.do(t, "POST", "/admin/v2/namespaces/public/default/icebergPolicies", `{"partitioning":"weekly"}`); code != 400 {
		t.Fatalf("bad policy: %d, want 400", code)
	}
	c := e.client(t)
	p, err := c.CreateProducer(pulsar.ProducerOptions{
		Topic: "persistent://public/default/orders", Schema: pulsar.NewAvroSchema(avroSchema, nil),
		BatchingMaxMessages: 10,
	})
	if err != nil {
		t.Fatal(err)
	}
	const n = 100
	ctx := context.Background()
	for i := range n {
		var price *float64
		if i%3 != 0 {
			v := float64(i) / 4
			price = &v
		}
		p.SendAsync(ctx, &pulsar.ProducerMessage{Value: order{ID: int64(i), Item: fmt.Sprintf("item-%d", i), Price: price}, Key: fmt.Sprintf("k%d", i%7),
			Properties: map[string]string{"n": fmt.Sprint(i)}}, func(_ pulsar.MessageID, _ *pulsar.ProducerMessage, err error) {
			if err != nil {
				t.Errorf("send: %v", err)
			}
		})
	}
	if err := p.Flush(); err != nil {
		t.Fatal(err)
	}
	e.waitRows(t, "public/default/orders", n)
	// The lag (icebergStats lagMessages) comes down to 0 once everything is committed.
	deadline := time.Now().Add(testDeadline)
	for {
		ps, _ := e.icebergStats(t, "public/default/orders")["partitions"].([]any)
		if len(ps) == 1 && ps[0].(map[string]any)["lagMessages"].(float64) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("lag not 0: %v", ps)
		}
		time.Sleep(200 * time.Millisecond)
	}

	code, body := e.do(t, "GET", "/iceberg/v1/config", "")
	if code != 200 {
		t.Fatalf("config: %d %s", code, body)
	}
	code, body = e.do(t, "GET", "/iceberg/v1/namespaces/public%1Fdefault/tables", "")
	if code != 200 || !strings.Contains(body, `"orders"`) {
		t.Fatalf("list tables: %d %s", code, body)
	}
	code, body = e.do(t, "GET", "/iceberg/v1/namespaces/public%1Fdefault/tables/orders", "")
	if code != 200 || !strings.Contains(body, `"metadata-location"`) || !strings.Contains(body, "__publish_time__") {
		t.Fatalf("load table: %d %s", code, body)
	}
	if code, body = e.do(t, "POST", "/iceberg/v1/namespaces/public%1Fdefault/tables/orders", `{}`); code != 403 || !strings.Contains(body, "ForbiddenException") {
		t.Fatalf("commit by a client: %d %s", code, body)
	}
	if code, body = e.do(t, "GET", "/iceberg/v1/namespaces/public%1Fdefault/tables/nope", ""); code != 404 || !strings.Contains(body, "NoSuchTableException") {
		t.Fatalf("missing table: %d %s", code, body)
	}
	rows := readTable(t, e, "public", "default", "orders")
	if len(rows) != n {
		t.Fatalf("%d rows in the table, want %d", len(rows), n)
	}
	seen := map[int64]bool{}
	for _, r := range rows {
		id := r.Int("id")
		if seen[id] {
			t.Fatalf("row %d twice", id)
		}
		seen[id] = true
		if r.Str("item") != fmt.Sprintf("item-%d", id) {
			t.Fatalf("row %d: item %q", id, r.Str("item"))
		}
		if r.Str("__key__") != fmt.Sprintf("k%d", id%7) {
			t.Fatalf("row %d: key %q", id, r.Str("__key__"))
		}
		if !strings.Contains(r.Str("__properties__"), fmt.Sprintf(`"n":"%d"`, id)) {
			t.Fatalf("row %d: properties %q", id, r.Str("__properties__"))
		}
		if (id%3 == 0) != r.IsNull("price") {
			t.Fatalf("row %d: price null=%v", id, r.IsNull("price"))
		}
	}
}

// row is one table row read back, by column name.
type row map[string]any

func (r row) Int(c string) int64 {
	switch v := r[c].(type) {
	case int64:
		return v
	case int32:
		return int64(v)
	}
	return -1
}

func (r row) Str(c string) string { s, _ := r[c].(string); return s }

func (r row) IsNull(c string) bool { return r[c] == nil }

// readTable reads a table through the REST catalog with iceberg-go's client (the engine's
// view: catalog, metadata, manifests and Parquet files from the object store).
func readTable(t *testing.T, e *env, tenant, ns, name string) []row {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cat, err := rest.NewCatalog(ctx, "magnetar", e.url("/iceberg"))
	if err != nil {
		t.Fatalf("REST catalog: %v", err)
	}
	tbl, err := cat.LoadTable(ctx, table.Identifier{tenant, ns, name})
	if err != nil {
		t.Fatalf("load %s.%s.%s: %v", tenant, ns, name, err)
	}
	at, err := tbl.Scan().ToArrowTable(ctx)
	if err != nil {
		t.Fatalf("scan: %v", err)
	}
	defer at.Release()
	var out []row
	tr := array.NewTableReader(at, 1024)
	defer tr.Release()
	for tr.Next() {
		rec := tr.RecordBatch()
		for i := 0; i < int(rec.NumRows()); i++ {
			r := row{}
			for c, f := range rec.Schema().Fields() {
				col := rec.Column(c)
				if col.IsNull(i) {
					r[f.Name] = nil
					continue
				}
				switch a := col.(type) {
				case *array.Int64:
					r[f.Name] = a.Value(i)
				case *array.Int32:
					r[f.Name] = a.Value(i)
				case *array.String:
					r[f.Name] = a.Value(i)
				case *array.LargeString:
					r[f.Name] = a.Value(i)
				case *array.Float64:
					r[f.Name] = a.Value(i)
				default:
					r[f.Name] = a.ValueStr(i)
				}
			}
			out = append(out, r)
		}
	}
	return out
}

const avroSchemaV2 = `{"type":"record","name":"Order","namespace":"test","fields":[
 {"name":"id","type":"long"},{"name":"item","type":"string"},{"name":"price","type":["null","double"],"default":null},
 {"name":"qty","type":["null","int"],"default":null}]}`

type orderV2 struct {
	ID    int64    `avro:"id"`
	Item  string   `avro:"item"`
	Price *float64 `avro:"price"`
	Qty   *int32   `avro:"qty"`
}

// TestSchemaEvolutionAndDeadLetters: a topic policy (not the namespace's) enables the
// table; a new schema version adds a column, which becomes an optional Iceberg column that
// older rows leave null; a payload no schema decodes goes to the dead-letter topic with its
// origin, and the table goes on.
func TestSchemaEvolutionAndDeadLetters(t *testing.T) {
	e := startEnv(t, nil)
	const topic = "persistent://public/default/evolve"
	c := e.client(t)
	p1, err := c.CreateProducer(pulsar.ProducerOptions{Topic: topic, Schema: pulsar.NewAvroSchema(avroSchema, nil), DisableBatching: true})
	if err != nil {
		t.Fatal(err)
	}
	if code, body := e.do(t, "POST", "/admin/v2/persistent/public/default/evolve/icebergPolicies", `{"enabled":true,"partitioning":"day"}`); code != 204 {
		t.Fatalf("set topic policy: %d %s", code, body)
	}
	if code, body := e.do(t, "GET", "/admin/v2/persistent/public/default/evolve/icebergPolicies?applied=true", ""); code != 200 || !strings.Contains(body, `"Enabled":true`) {
		t.Fatalf("applied policy: %d %s", code, body)
	}
	ctx := context.Background()
	for i := range 10 {
		if _, err := p1.Send(ctx, &pulsar.ProducerMessage{Value: order{ID: int64(i), Item: "v1"}}); err != nil {
			t.Fatal(err)
		}
	}
	// A producer without a schema sends bytes no schema version decodes.
	raw, err := c.CreateProducer(pulsar.ProducerOptions{Topic: topic, DisableBatching: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := raw.Send(ctx, &pulsar.ProducerMessage{Payload: []byte{0xff, 0xfe, 0xfd}, Key: "bad"}); err != nil {
		t.Fatal(err)
	}
	p2, err := c.CreateProducer(pulsar.ProducerOptions{Topic: topic, Schema: pulsar.NewAvroSchema(avroSchemaV2, nil), DisableBatching: true})
	if err != nil {
		t.Fatal(err)
	}
	for i := 10; i < 20; i++ {
		q := int32(i * 2)
		if _, err := p2.Send(ctx, &pulsar.ProducerMessage{Value: orderV2{ID: int64(i), Item: "v2", Qty: &q}}); err != nil {
			t.Fatal(err)
		}
	}
	st := e.waitRows(t, "public/default/evolve", 20)
	ps := st["partitions"].([]any)
	if dl := ps[0].(map[string]any)["deadLetters"].(float64); dl != 1 {
		t.Fatalf("deadLetters %v, want 1; stats %v", dl, st)
	}

	dlq, err := c.CreateReader(pulsar.ReaderOptions{Topic: topic + "-iceberg-DLQ", StartMessageID: pulsar.EarliestMessageID()})
	if err != nil {
		t.Fatal(err)
	}
	defer dlq.Close()
	rctx, cancel := context.WithTimeout(ctx, testDeadline)
	defer cancel()
	m, err := dlq.Next(rctx)
	if err != nil {
		t.Fatal(err)
	}
	if string(m.Payload()) != "\xff\xfe\xfd" || m.Key() != "bad" || m.Properties()["ICEBERG_ORIGIN_TOPIC"] != topic ||
		!strings.HasPrefix(m.Properties()["ICEBERG_ORIGIN_MESSAGE_ID"], "(") || m.Properties()["ICEBERG_ERROR"] == "" {
		t.Fatalf("dead letter %q key %q properties %v", m.Payload(), m.Key(), m.Properties())
	}

	rows := readTable(t, e, "public", "default", "evolve")
	if len(rows) != 20 {
		t.Fatalf("%d rows, want 20", len(rows))
	}
	for _, r := range rows {
		id := r.Int("id")
		if _, ok := r["qty"]; !ok {
			t.Fatalf("no qty column: %v", r)
		}
		switch {
		case id < 10 && (!r.IsNull("qty") || r.Str("item") != "v1"):
			t.Fatalf("v1 row %v", r)
		case id >= 10 && (r.Int("qty") != id*2 || r.Str("item") != "v2"):
			t.Fatalf("v2 row %v", r)
		}
	}
}
