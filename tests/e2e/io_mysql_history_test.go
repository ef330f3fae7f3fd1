//go:build iocompat

package e2e

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
	pa "github.com/apache/pulsar-client-go/pulsaradmin/pkg/admin"
	paconfig "github.com/apache/pulsar-client-go/pulsaradmin/pkg/admin/config"
	"github.com/apache/pulsar-client-go/pulsaradmin/pkg/utils"

	"github.com/magnetar-io/magnetar/internal/testenv"
)

// TestIOWorkerSIGKILLMySQLSchemaHistory: debezium-mysql runs in a magnetar process, which
// is SIGKILLed once its checkpoint is saved; while it is down the table gets rows with its
// old columns, an ALTER TABLE (a column added, one dropped) and rows with the new ones. The
// restarted process knows nothing but its checkpoint and the schema history topic, and must
// decode every event of the backlog with the columns it was written with.
func TestIOWorkerSIGKILLMySQLSchemaHistory(t *testing.T) {
	m := testenv.StartMariaDB(t)
	m.Exec(t, "", "CREATE DATABASE hsrc")
	m.Exec(t, "hsrc", "CREATE TABLE hist (id int PRIMARY KEY, a varchar(20), b int)", "INSERT INTO hist VALUES (1, 'a1', 10), (2, 'a2', 20)")

	dir := t.TempDir()
	port := freeTCPPort(t)
	ports := []string{"--port", strconv.Itoa(port), "--http-port", strconv.Itoa(freeTCPPort(t))}
	p, _, httpAddr := startStandalone(t, dir, ports...)
	defer func() { p.kill() }()
	a, err := pa.New(&paconfig.Config{WebServiceURL: "http://" + httpAddr})
	if err != nil {
		t.Fatal(err)
	}
	src := &utils.SourceConfig{Tenant: "public", Namespace: "default", Name: "hcdc", Archive: "builtin://debezium-mysql", Parallelism: 1,
		Configs: map[string]any{"database.hostname": "127.0.0.1", "database.port": fmt.Sprint(m.Port), "database.user": m.User,
			"database.password": m.Password, "database.server.id": "184200", "topic.prefix": "hs", "database.include.list": "hsrc",
			"offset.flush.interval.ms": "100"}}
	waitUntil(t, "the source created", func() (bool, error) {
		if _, err := a.Sources().GetSource("public", "default", "hcdc"); err != nil {
			if err := a.Sources().CreateSource(src, src.Archive); err != nil {
				return false, err
			}
		}
		return true, nil
	})
	cl, err := pulsar.NewClient(pulsar.ClientOptions{URL: fmt.Sprintf("pulsar://127.0.0.1:%d", port), OperationTimeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	cons, err := cl.Subscribe(pulsar.ConsumerOptions{Topic: "persistent://public/default/hs.hsrc.hist", SubscriptionName: "check",
		SubscriptionInitialPosition: pulsar.SubscriptionPositionEarliest})
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	// seen are the events received so far: the broker may deliver them again after the kill
	// (acknowledgements are asynchronous), the source may not.
	seen := map[string]bool{}
	expect := func(want ...string) {
		t.Helper()
		for i, w := range want {
			var got string
			for got == "" {
				msg, err := cons.Receive(ctx)
				if err != nil {
					t.Fatalf("event %d (want %s): %v", i, w, err)
				}
				cons.Ack(msg)
				if len(msg.Payload()) == 0 {
					continue // a delete's tombstone
				}
				var env struct {
					Op            string
					Before, After map[string]any
				}
				if err := json.Unmarshal(msg.Payload(), &env); err != nil {
					t.Fatalf("event %d: %v: %s", i, err, msg.Payload())
				}
				got = env.Op + " " + rowImage(env.Before) + " " + rowImage(env.After)
				if seen[got] && got != w {
					got = "" // redelivered
				}
			}
			seen[got] = true
			if got != w {
				t.Fatalf("event %d:\n got %s\nwant %s", i, got, w)
			}
		}
	}
	expect("r - {a:a1,b:10,id:1}", "r - {a:a2,b:20,id:2}")
	m.Exec(t, "hsrc", "INSERT INTO hist VALUES (3, 'a3', 30)", "UPDATE hist SET b = 11 WHERE id = 1")
	expect("c - {a:a3,b:30,id:3}", "u {a:a1,b:10,id:1} {a:a1,b:11,id:1}")

	// Kill only once the checkpoint has these changes, so the restart resumes exactly
	// before the statements below.
	db, err := sql.Open("mysql", m.DSN("hsrc"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var file string
	var pos uint32
	var ignore1, ignore2 any
	if err := db.QueryRowContext(ctx, "SHOW MASTER STATUS").Scan(&file, &pos, &ignore1, &ignore2); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "the checkpoint at the binlog's end", func() (bool, error) {
		resp, err := http.Get("http://" + httpAddr + "/admin/v3/functions/public/default/hcdc/state/__connector_offsets__/0")
		if err != nil {
			return false, err
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		var st struct{ StringValue string }
		var cp struct {
			File string
			Pos  uint32
		}
		if json.Unmarshal(b, &st) != nil || json.Unmarshal([]byte(st.StringValue), &cp) != nil {
			return false, fmt.Errorf("state: %s", b)
		}
		return cp.File == file && cp.Pos >= pos, fmt.Errorf("checkpoint %+v, binlog at %s:%d", cp, file, pos)
	})
	p.kill()

	m.Exec(t, "hsrc", "INSERT INTO hist VALUES (4, 'a4', 40)", "UPDATE hist SET b = 21 WHERE id = 2",
		"ALTER TABLE hist ADD COLUMN c varchar(10) NULL, DROP COLUMN b",
		"INSERT INTO hist VALUES (5, 'a5', 'c5')", "UPDATE hist SET c = 'c4' WHERE id = 4", "DELETE FROM hist WHERE id = 3")
	p, _, _ = startStandalone(t, dir, ports...)
	expect("c - {a:a4,b:40,id:4}", "u {a:a2,b:20,id:2} {a:a2,b:21,id:2}",
		"c - {a:a5,c:c5,id:5}", "u {a:a4,c:<nil>,id:4} {a:a4,c:c4,id:4}", "d {a:a3,c:<nil>,id:3} -")
	m.Exec(t, "hsrc", "INSERT INTO hist VALUES (6, 'a6', 'c6')")
	expect("c - {a:a6,c:c6,id:6}")
}

// rowImage is a row image as {k:v,...} in order of name ("-" for none).
func rowImage(row map[string]any) string {
	if row == nil {
		return "-"
	}
	keys := make([]string, 0, len(row))
	for k := range row {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s:%v", k, row[k])
	}
	return "{" + strings.Join(parts, ",") + "}"
}
