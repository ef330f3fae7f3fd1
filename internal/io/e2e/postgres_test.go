package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
	"github.com/apache/pulsar-client-go/pulsaradmin/pkg/utils"
	"github.com/jackc/pgx/v5"

	"github.com/magnetar-io/magnetar/internal/testenv"
)

const pgTable = `CREATE TABLE customers (
	id int PRIMARY KEY, name text NOT NULL, balance numeric(12,2), active boolean, created timestamp,
	born date, photo bytea, note varchar(40), score double precision)`

// pgRow writes row i's values.
func pgRow(i int, version string) string {
	return fmt.Sprintf("(%d, 'name-%d-%s', %d.%02d, %t, '2024-01-%02d 10:%02d:%02d.%06d', '19%02d-03-04', '\\x%02x%02x', %s, %d.5)",
		i, i, version, i*7, i%100, i%2 == 0, i%28+1, i%60, i%60, i*37%1000000, i%100, i%256, (i*3)%256,
		map[bool]string{true: "NULL", false: fmt.Sprintf("'note %d'", i)}[i%5 == 0], i)
}

func insertPG(t *testing.T, pg *testenv.Postgres, db string, from, to int, version string) {
	t.Helper()
	var rows []string
	for i := from; i < to; i++ {
		rows = append(rows, pgRow(i, version))
	}
	pg.Exec(t, db, "INSERT INTO customers VALUES "+strings.Join(rows, ","))
}

// pgDump is every row of customers as text, ordered by id: what an exact comparison compares.
func pgDump(t *testing.T, pg *testenv.Postgres, db string) ([]string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := pgx.Connect(ctx, pg.DSN(db))
	if err != nil {
		return nil, err
	}
	defer c.Close(ctx)
	rows, err := c.Query(ctx, `SELECT concat_ws('|', id, name, balance::text, active::text, created::text, born::text,
		encode(photo, 'hex'), coalesce(note, '<null>'), score::text) FROM customers ORDER BY id`)
	if err != nil {
		return nil, err
	}
	var out []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, rows.Err()
}

// TestPostgresCDCToJDBC is the end-to-end path of make test: debezium-postgres snapshots
// and streams a table (inserts, updates, deletes, a primary key change) into its topic,
// jdbc-postgres applies the topic to a second database, PostgreSQL is restarted in the
// middle (both the replication stream and the sink's connection break), and the copy must
// end up holding exactly the source's rows. The topic holds Debezium envelopes.
func TestPostgresCDCToJDBC(t *testing.T) {
	pg := testenv.StartPostgres(t, testenv.PostgresOptions{})
	pg.CreateDatabase(t, "src")
	pg.CreateDatabase(t, "dst")
	pg.Exec(t, "src", pgTable)
	pg.Exec(t, "dst", pgTable)
	insertPG(t, pg, "src", 0, 200, "v1") // the snapshot

	a := admin(t)
	topic := "persistent://public/default/pgserver1.public.customers"
	src := &utils.SourceConfig{Tenant: "public", Namespace: "default", Name: "pg-cdc", Archive: "builtin://debezium-postgres",
		Parallelism: 1, Configs: map[string]any{
			"database.hostname": "127.0.0.1", "database.port": fmt.Sprint(pg.Port), "database.user": "postgres",
			"database.password": "", "database.dbname": "src", "topic.prefix": "pgserver1",
			"table.include.list": "public.customers", "slot.name": "magnetar_e2e", "plugin.name": "pgoutput",
		}}
	if err := a.Sources().CreateSource(src, src.Archive); err != nil {
		t.Fatal(err)
	}
	sink := &utils.SinkConfig{Tenant: "public", Namespace: "default", Name: "pg-copy", Archive: "builtin://jdbc-postgres",
		Inputs: []string{topic}, Parallelism: 1, RetainOrdering: true, SourceSubscriptionPosition: "Earliest",
		Configs: map[string]any{
			"jdbcUrl": fmt.Sprintf("jdbc:postgresql://127.0.0.1:%d/dst", pg.Port), "userName": "postgres", "password": "",
			"tableName": "customers", "insertMode": "UPSERT", "nullValueAction": "DELETE", "batchSize": 50, "timeoutMs": 100,
		}}
	if err := a.Sinks().CreateSink(sink, sink.Archive); err != nil {
		t.Fatal(err)
	}
	defer func() {
		_ = a.Sinks().DeleteSink("public", "default", "pg-copy")
		_ = a.Sources().DeleteSource("public", "default", "pg-cdc")
	}()

	converged := func(what string) {
		t.Helper()
		eventually(t, what, func() (bool, error) {
			want, err := pgDump(t, pg, "src")
			if err != nil {
				return false, err
			}
			got, err := pgDump(t, pg, "dst")
			if err != nil {
				return false, err
			}
			if fmt.Sprint(got) == fmt.Sprint(want) {
				return true, nil
			}
			st, _ := a.Sinks().GetSinkStatus("public", "default", "pg-copy")
			return false, fmt.Errorf("copy has %d rows, source %d; sink status %+v", len(got), len(want), st)
		})
	}
	converged("the snapshot copied")

	// Streaming: inserts, updates, deletes, a key change.
	insertPG(t, pg, "src", 200, 300, "v1")
	pg.Exec(t, "src", "UPDATE customers SET name = name || '-u', balance = balance + 1 WHERE id % 3 = 0",
		"DELETE FROM customers WHERE id % 10 = 7", "UPDATE customers SET id = 10000 WHERE id = 11",
		"UPDATE customers SET note = NULL, photo = NULL WHERE id BETWEEN 20 AND 30")
	// The database goes away in the middle of the stream and comes back.
	pg.Stop()
	pg.Start()
	insertPG(t, pg, "src", 300, 400, "v2")
	pg.Exec(t, "src", "DELETE FROM customers WHERE id BETWEEN 100 AND 120", "UPDATE customers SET active = NOT active WHERE id > 350")
	converged("the stream applied across a database restart")

	st, err := a.Sources().GetSourceStatus("public", "default", "pg-cdc")
	if err != nil || st.NumRunning != 1 || st.Instances[0].Status.NumWritten == 0 {
		t.Fatalf("source status: %+v %v", st, err)
	}

	// The topic holds Debezium envelopes keyed by the primary key.
	cons, err := client(t).Subscribe(pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "check-envelope",
		SubscriptionInitialPosition: pulsar.SubscriptionPositionEarliest})
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	ctx, cancel := context.WithTimeout(context.Background(), hangLimit)
	defer cancel()
	m, err := cons.Receive(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var env struct {
		Before map[string]any `json:"before"`
		After  map[string]any `json:"after"`
		Op     string         `json:"op"`
		TsMs   int64          `json:"ts_ms"`
		Source map[string]any `json:"source"`
	}
	if err := json.Unmarshal(m.Payload(), &env); err != nil {
		t.Fatalf("not JSON: %s", m.Payload())
	}
	if env.Op != "r" || env.Before != nil || env.After["id"] != float64(0) || env.After["name"] != "name-0-v1" ||
		env.Source["connector"] != "postgresql" || env.Source["table"] != "customers" || env.Source["schema"] != "public" || env.TsMs == 0 {
		t.Fatalf("first event: %s", m.Payload())
	}
	if m.Key() != `{"id":0}` {
		t.Fatalf("key %q", m.Key())
	}
}
