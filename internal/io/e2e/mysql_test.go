package e2e

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
	"github.com/apache/pulsar-client-go/pulsaradmin/pkg/utils"

	"github.com/magnetar-io/magnetar/internal/testenv"
)

const myTable = `CREATE TABLE customers (
	id int PRIMARY KEY, name varchar(64) NOT NULL, balance decimal(12,2), active tinyint(1), created datetime(6),
	born date, photo varbinary(16), note varchar(40), score double, kind enum('a','b','c'), big bigint unsigned,
	at time(3), stamp timestamp(3) NULL)`

// myRow writes row i's values.
func myRow(i int, version string) string {
	note := fmt.Sprintf("'note %d'", i)
	if i%5 == 0 {
		note = "NULL"
	}
	return fmt.Sprintf("(%d, 'name-%d-%s', %d.%02d, %d, '2024-01-%02d 10:%02d:%02d.%06d', '19%02d-03-04', x'%02x%02x', %s, %d.5, '%c', %d, '%02d:%02d:%02d.%03d', '2023-05-%02d 01:02:03.%03d')",
		i, i, version, i*7, i%100, i%2, i%28+1, i%60, i%60, i*37%1000000, i%100, i%256, (i*3)%256, note, i, "abc"[i%3],
		uint64(1)<<63+uint64(i), i%24, i%60, (i*7)%60, i%1000, i%28+1, (i*3)%1000)
}

func insertMy(t *testing.T, m *testenv.MariaDB, db string, from, to int, version string) {
	t.Helper()
	var rows []string
	for i := from; i < to; i++ {
		rows = append(rows, myRow(i, version))
	}
	m.Exec(t, db, "INSERT INTO customers VALUES "+strings.Join(rows, ","))
}

// myDump is every row of table customers of db as text, ordered by id.
func myDump(m *testenv.MariaDB, db string, extra string) ([]string, error) {
	c, err := sql.Open("mysql", m.DSN(db))
	if err != nil {
		return nil, err
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	rows, err := c.QueryContext(ctx, `SELECT CONCAT_WS('|', id, name, balance, active, created, born, HEX(photo),
		COALESCE(note, '<null>'), score, kind, big, at, stamp`+extra+`) FROM customers ORDER BY id`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
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

// TestMySQLCDCToJDBC: debezium-mysql snapshots a MariaDB table and follows its binary log
// (inserts, updates, deletes, a primary key change, an ALTER TABLE), jdbc-mariadb applies the
// topic to a second database, MariaDB is killed and restarted in the middle (the binlog
// stream and the sink's connection break), and the copy must hold exactly the source's rows.
func TestMySQLCDCToJDBC(t *testing.T) {
	m := testenv.StartMariaDB(t)
	m.Exec(t, "", "CREATE DATABASE src", "CREATE DATABASE dst")
	m.Exec(t, "src", myTable)
	m.Exec(t, "dst", myTable)
	insertMy(t, m, "src", 0, 150, "v1") // the snapshot

	a := admin(t)
	topic := "persistent://public/default/myserver1.src.customers"
	src := &utils.SourceConfig{Tenant: "public", Namespace: "default", Name: "my-cdc", Archive: "builtin://debezium-mysql",
		Parallelism: 1, Configs: map[string]any{
			"database.hostname": "127.0.0.1", "database.port": fmt.Sprint(m.Port), "database.user": m.User,
			"database.password": m.Password, "database.server.id": "184054", "topic.prefix": "myserver1",
			"database.include.list": "src", "offset.flush.interval.ms": "200",
		}}
	if err := a.Sources().CreateSource(src, src.Archive); err != nil {
		t.Fatal(err)
	}
	sink := &utils.SinkConfig{Tenant: "public", Namespace: "default", Name: "my-copy", Archive: "builtin://jdbc-mariadb",
		Inputs: []string{topic}, Parallelism: 1, RetainOrdering: true, SourceSubscriptionPosition: "Earliest",
		Configs: map[string]any{
			"jdbcUrl": m.JDBCURL("dst"), "userName": m.User, "password": m.Password,
			"tableName": "customers", "insertMode": "UPSERT", "nullValueAction": "DELETE", "batchSize": 50, "timeoutMs": 100,
		}}
	if err := a.Sinks().CreateSink(sink, sink.Archive); err != nil {
		t.Fatal(err)
	}
	defer func() {
		_ = a.Sinks().DeleteSink("public", "default", "my-copy")
		_ = a.Sources().DeleteSource("public", "default", "my-cdc")
	}()

	converged := func(what, extra string) {
		t.Helper()
		eventually(t, what, func() (bool, error) {
			want, err := myDump(m, "src", extra)
			if err != nil {
				return false, err
			}
			got, err := myDump(m, "dst", extra)
			if err != nil {
				return false, err
			}
			if fmt.Sprint(got) == fmt.Sprint(want) {
				return true, nil
			}
			st, _ := a.Sinks().GetSinkStatus("public", "default", "my-copy")
			ss, _ := a.Sources().GetSourceStatus("public", "default", "my-cdc")
			diff := ""
			for i := range min(len(got), len(want)) {
				if got[i] != want[i] {
					diff = fmt.Sprintf("first difference: %q != %q", got[i], want[i])
					break
				}
			}
			var sst, srt any
			if len(st.Instances) > 0 {
				sst = st.Instances[0].Status
			}
			if len(ss.Instances) > 0 {
				srt = ss.Instances[0].Status
			}
			return false, fmt.Errorf("copy has %d rows, source %d; %s; sink %+v; source %+v", len(got), len(want), diff, sst, srt)
		})
	}
	converged("the snapshot copied", "")

	insertMy(t, m, "src", 150, 250, "v1")
	m.Exec(t, "src", "UPDATE customers SET name = CONCAT(name, '-u'), balance = balance + 1 WHERE id % 3 = 0",
		"DELETE FROM customers WHERE id % 10 = 7", "UPDATE customers SET id = 10000 WHERE id = 11",
		"UPDATE customers SET note = NULL, photo = NULL, stamp = NULL WHERE id BETWEEN 20 AND 30")
	converged("the stream applied", "")

	// The server crashes mid-stream and comes back; the binlog stream resumes where it was.
	m.Kill()
	m.Start()
	insertMy(t, m, "src", 250, 320, "v2")
	m.Exec(t, "src", "DELETE FROM customers WHERE id BETWEEN 100 AND 120", "UPDATE customers SET active = 1 - active WHERE id > 280")
	converged("the stream applied across a database crash", "")

	// DDL: a new column reaches the topic's schema and the copy.
	m.Exec(t, "dst", "ALTER TABLE customers ADD COLUMN tier int NULL")
	m.Exec(t, "src", "ALTER TABLE customers ADD COLUMN tier int NULL", "UPDATE customers SET tier = id % 4 WHERE id < 50")
	var rows []string
	for i := 400; i < 410; i++ {
		rows = append(rows, strings.TrimSuffix(myRow(i, "v3"), ")")+fmt.Sprintf(", %d)", i%4))
	}
	m.Exec(t, "src", "INSERT INTO customers VALUES "+strings.Join(rows, ","))
	converged("the stream applied after ALTER TABLE", ", COALESCE(tier, '<null>')")

	st, err := a.Sources().GetSourceStatus("public", "default", "my-cdc")
	if err != nil || st.NumRunning != 1 || st.Instances[0].Status.NumWritten == 0 {
		t.Fatalf("source status: %+v %v", st, err)
	}

	cons, err := client(t).Subscribe(pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "check-envelope",
		SubscriptionInitialPosition: pulsar.SubscriptionPositionEarliest})
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	ctx, cancel := context.WithTimeout(context.Background(), hangLimit)
	defer cancel()
	type envelope struct {
		Before map[string]any `json:"before"`
		After  map[string]any `json:"after"`
		Op     string         `json:"op"`
		TsMs   int64          `json:"ts_ms"`
		Source map[string]any `json:"source"`
	}
	msg, err := cons.Receive(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var env envelope
	if err := json.Unmarshal(msg.Payload(), &env); err != nil {
		t.Fatalf("not JSON: %s", msg.Payload())
	}
	if env.Op != "r" || env.Before != nil || env.After["id"] != float64(0) || env.After["name"] != "name-0-v1" ||
		env.Source["connector"] != "mysql" || env.Source["db"] != "src" || env.Source["table"] != "customers" ||
		env.After["kind"] != "a" || env.After["balance"] != "0.00" || env.After["born"] != float64(-25505) {
		t.Fatalf("first event: %s", msg.Payload())
	}
	if msg.Key() != `{"id":0}` {
		t.Fatalf("key %q", msg.Key())
	}
	// Find a streamed update: it has both images and a binlog position.
	for {
		msg, err := cons.Receive(ctx)
		if err != nil {
			t.Fatal(err)
		}
		env = envelope{}
		if len(msg.Payload()) == 0 || json.Unmarshal(msg.Payload(), &env) != nil || env.Op != "u" {
			continue
		}
		if env.Before == nil || env.After == nil || env.Source["file"] == "" || env.Source["pos"] == float64(0) || env.Source["snapshot"] != "false" {
			t.Fatalf("update event: %s", msg.Payload())
		}
		break
	}
}
