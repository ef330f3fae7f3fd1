//go:build iocompat

package e2e

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	pa "github.com/apache/pulsar-client-go/pulsaradmin/pkg/admin"
	paconfig "github.com/apache/pulsar-client-go/pulsaradmin/pkg/admin/config"
	"github.com/apache/pulsar-client-go/pulsaradmin/pkg/utils"
	"github.com/jackc/pgx/v5"

	"github.com/magnetar-io/magnetar/internal/testenv"
)

// TestIOWorkerSIGKILLLosesNoChange: debezium-postgres streams a table through a topic into
// jdbc-postgres, which copies it into a second database, while a writer keeps committing
// inserts, updates and deletes; the magnetar process (broker, bookie and functions worker)
// is SIGKILLed twice mid-stream and restarted on its data directory. Every change PostgreSQL
// committed must reach the copy: in the end it holds exactly the source's rows.
func TestIOWorkerSIGKILLLosesNoChange(t *testing.T) {
	pg := testenv.StartPostgres(t, testenv.PostgresOptions{})
	pg.CreateDatabase(t, "src")
	pg.CreateDatabase(t, "dst")
	const table = "CREATE TABLE items (id int PRIMARY KEY, v text NOT NULL)"
	pg.Exec(t, "src", table, "INSERT INTO items SELECT g, 'snap-' || g FROM generate_series(0, 199) g")
	pg.Exec(t, "dst", table)

	dir := t.TempDir()
	ports := []string{"--port", strconv.Itoa(freeTCPPort(t)), "--http-port", strconv.Itoa(freeTCPPort(t))}
	p, _, httpAddr := startStandalone(t, dir, ports...)
	a, err := pa.New(&paconfig.Config{WebServiceURL: "http://" + httpAddr})
	if err != nil {
		t.Fatal(err)
	}
	src := &utils.SourceConfig{Tenant: "public", Namespace: "default", Name: "cdc", Archive: "builtin://debezium-postgres", Parallelism: 1,
		Configs: map[string]any{"database.hostname": "127.0.0.1", "database.port": fmt.Sprint(pg.Port), "database.user": "postgres",
			"database.password": "", "database.dbname": "src", "topic.prefix": "crash", "table.include.list": "public.items",
			"slot.name": "magnetar_crash", "offset.flush.interval.ms": "200"}}
	sink := &utils.SinkConfig{Tenant: "public", Namespace: "default", Name: "copy", Archive: "builtin://jdbc-postgres", Parallelism: 1,
		Inputs: []string{"persistent://public/default/crash.public.items"}, RetainOrdering: true, SourceSubscriptionPosition: "Earliest",
		Configs: map[string]any{"jdbcUrl": fmt.Sprintf("jdbc:postgresql://127.0.0.1:%d/dst", pg.Port), "userName": "postgres",
			"tableName": "items", "insertMode": "UPSERT", "nullValueAction": "DELETE", "batchSize": 50, "timeoutMs": 50}}
	waitUntil(t, "the source and sink created", func() (bool, error) {
		if _, err := a.Sources().GetSource("public", "default", "cdc"); err != nil {
			if err := a.Sources().CreateSource(src, src.Archive); err != nil {
				return false, err
			}
		}
		if _, err := a.Sinks().GetSink("public", "default", "copy"); err != nil {
			if err := a.Sinks().CreateSink(sink, sink.Archive); err != nil {
				return false, err
			}
		}
		return true, nil
	})

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	dump := func(db string) (map[int]string, error) {
		c, err := pgx.Connect(ctx, pg.DSN(db))
		if err != nil {
			return nil, err
		}
		defer c.Close(ctx)
		rows, err := c.Query(ctx, "SELECT id, v FROM items")
		if err != nil {
			return nil, err
		}
		out := map[int]string{}
		for rows.Next() {
			var id int
			var v string
			if err := rows.Scan(&id, &v); err != nil {
				return nil, err
			}
			out[id] = v
		}
		return out, rows.Err()
	}
	copied := func(atLeast int) {
		waitUntil(t, fmt.Sprintf("%d rows copied", atLeast), func() (bool, error) {
			d, err := dump("dst")
			return len(d) >= atLeast, err
		})
	}

	// The writer: each statement commits on its own (what PostgreSQL acknowledged).
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		c, err := pgx.Connect(ctx, pg.DSN("src"))
		if err != nil {
			t.Error(err)
			return
		}
		defer c.Close(context.Background())
		for i := 200; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			stmts := []string{fmt.Sprintf("INSERT INTO items VALUES (%d, 'w-%d')", i, i)}
			if i%3 == 0 {
				stmts = append(stmts, fmt.Sprintf("UPDATE items SET v = v || '-u' WHERE id = %d", i/2))
			}
			if i%7 == 0 {
				stmts = append(stmts, fmt.Sprintf("DELETE FROM items WHERE id = %d", i-100))
			}
			for _, s := range stmts {
				if _, err := c.Exec(ctx, s); err != nil {
					t.Error(err)
					return
				}
			}
			time.Sleep(2 * time.Millisecond) // a steady stream, not a flood
		}
	}()

	copied(250)
	for round := 0; round < 2; round++ {
		p.kill()
		p, _, _ = startStandalone(t, dir, ports...)
		d, err := dump("dst")
		if err != nil {
			t.Fatal(err)
		}
		copied(len(d) + 50) // streaming again after the restart
	}
	close(stop)
	wg.Wait()
	waitUntil(t, "the copy equal to the source", func() (bool, error) {
		want, err := dump("src")
		if err != nil {
			return false, err
		}
		got, err := dump("dst")
		if err != nil {
			return false, err
		}
		for id, v := range want {
			if got[id] != v {
				return false, fmt.Errorf("row %d: copy %q, source %q (%d vs %d rows)", id, got[id], v, len(got), len(want))
			}
		}
		return len(got) == len(want), fmt.Errorf("copy has %d rows, source %d", len(got), len(want))
	})
}
