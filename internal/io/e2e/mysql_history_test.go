package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"

	"github.com/magnetar-io/magnetar/internal/io/builtin"
	"github.com/magnetar-io/magnetar/internal/io/connector"
	"github.com/magnetar-io/magnetar/internal/testenv"
)

// TestMySQLSchemaHistory: events logged before an ALTER TABLE that the source reads only
// after it (a backlog, and a restart from an older checkpoint) are decoded with the columns
// they were written with, because the source records DDL in its schema history topic and
// replays it. Each run is a new source instance that keeps nothing but its checkpoint and
// the topic, as a restarted process does; without the history (Debezium's in-memory one)
// the same replay fails.
func TestMySQLSchemaHistory(t *testing.T) {
	m := testenv.StartMariaDB(t)
	m.Exec(t, "", "CREATE DATABASE hsrc")
	m.Exec(t, "hsrc", "CREATE TABLE hist (id int PRIMARY KEY, a varchar(20), b int)", "INSERT INTO hist VALUES (1, 'a1', 10), (2, 'a2', 20)")
	topic := "persistent://public/default/hs.hsrc.hist"
	historyTopic := "persistent://public/default/hist-cdc-debezium-history-topic"
	cl := client(t)
	reg := builtin.Registry()
	start := func(offsets connector.OffsetStore, extra map[string]any) *connector.Instance {
		t.Helper()
		cfg := map[string]any{"database.hostname": "127.0.0.1", "database.port": fmt.Sprint(m.Port), "database.user": m.User,
			"database.password": m.Password, "database.server.id": "184100", "topic.prefix": "hs", "database.include.list": "hsrc",
			"offset.flush.interval.ms": "100"}
		for k, v := range extra {
			cfg[k] = v
		}
		in, err := connector.Start(reg, connector.Spec{Kind: connector.KindSource, Tenant: "public", Namespace: "default", Name: "hist-cdc",
			Archive: "builtin://debezium-mysql", Configs: cfg, BrokerServiceURL: "pulsar://" + sa.BrokerAddr(), Offsets: offsets})
		if err != nil {
			t.Fatal(err)
		}
		return in
	}
	stop := func(in *connector.Instance) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), hangLimit)
		defer cancel()
		if err := in.Stop(ctx); err != nil {
			t.Fatal(err)
		}
		if err := in.Err(); err != nil {
			t.Fatalf("the source failed: %v", err)
		}
	}
	var subs int
	// watch subscribes to the table topic from its end: it sees what the next run emits.
	watch := func() pulsar.Consumer {
		t.Helper()
		subs++
		c, err := cl.Subscribe(pulsar.ConsumerOptions{Topic: topic, SubscriptionName: fmt.Sprintf("hist-%d", subs),
			SubscriptionInitialPosition: pulsar.SubscriptionPositionLatest})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(c.Close)
		return c
	}
	// expect reads the next events (tombstones skipped) and compares them with want, each
	// "op before after" with the images' fields in order of name.
	expect := func(c pulsar.Consumer, in *connector.Instance, want ...string) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), hangLimit)
		defer cancel()
		for i, w := range want {
			var got string
			for got == "" {
				msg, err := c.Receive(ctx)
				if err != nil {
					t.Fatalf("event %d (want %s): %v; source error: %v", i, w, err, in.Err())
				}
				c.Ack(msg)
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
				got = env.Op + " " + image(env.Before) + " " + image(env.After)
			}
			if got != w {
				t.Fatalf("event %d:\n got %s\nwant %s", i, got, w)
			}
		}
	}

	// Run 1: the snapshot, then a stream.
	offsets := &connector.MemoryOffsets{}
	c1 := watch()
	in := start(offsets, nil)
	expect(c1, in, "r - {a:a1,b:10,id:1}", "r - {a:a2,b:20,id:2}")
	m.Exec(t, "hsrc", "INSERT INTO hist VALUES (3, 'a3', 30)", "UPDATE hist SET b = 11 WHERE id = 1")
	expect(c1, in, "c - {a:a3,b:30,id:3}", "u {a:a1,b:10,id:1} {a:a1,b:11,id:1}")
	stop(in)
	old, err := offsets.Load(context.Background())
	if err != nil || len(old) == 0 {
		t.Fatalf("no checkpoint: %q %v", old, err)
	}

	// While it is stopped: changes with the old columns, the ALTER, changes with the new.
	m.Exec(t, "hsrc", "INSERT INTO hist VALUES (4, 'a4', 40)", "UPDATE hist SET b = 21 WHERE id = 2",
		"ALTER TABLE hist ADD COLUMN c varchar(10) NULL, DROP COLUMN b",
		"INSERT INTO hist VALUES (5, 'a5', 'c5')", "UPDATE hist SET c = 'c4' WHERE id = 4", "DELETE FROM hist WHERE id = 3")
	backlog := []string{
		"c - {a:a4,b:40,id:4}", "u {a:a2,b:20,id:2} {a:a2,b:21,id:2}",
		"c - {a:a5,c:c5,id:5}", "u {a:a4,c:<nil>,id:4} {a:a4,c:c4,id:4}", "d {a:a3,c:<nil>,id:3} -",
	}

	// Run 2: a new instance reads the backlog from the checkpoint before the ALTER.
	c2 := watch()
	in = start(offsets, nil)
	expect(c2, in, backlog...)
	stop(in)

	// Run 3: a new instance from the old checkpoint again; the ALTER is in the history now
	// and must be replayed, not recorded twice.
	rewound := &connector.MemoryOffsets{}
	if err := rewound.Save(context.Background(), old); err != nil {
		t.Fatal(err)
	}
	c3 := watch()
	in = start(rewound, nil)
	expect(c3, in, backlog...)
	m.Exec(t, "hsrc", "INSERT INTO hist VALUES (6, 'a6', 'c6')")
	expect(c3, in, "c - {a:a6,c:c6,id:6}")
	// DDL the parser does not read (ALTER TABLE ... ORDER BY): the table's next event takes
	// the server's columns, and they are recorded at the statement.
	m.Exec(t, "hsrc", "ALTER TABLE hist ADD COLUMN e varchar(10), ORDER BY id", "INSERT INTO hist VALUES (7, 'a7', 'c7', 'e7')")
	expect(c3, in, "c - {a:a7,c:c7,e:e7,id:7}")
	stop(in)

	// The history holds the snapshot's columns and each ALTER, once.
	r, err := cl.CreateReader(pulsar.ReaderOptions{Topic: historyTopic, StartMessageID: pulsar.EarliestMessageID()})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var records []string
	ctx, cancel := context.WithTimeout(context.Background(), hangLimit)
	defer cancel()
	for r.HasNext() {
		msg, err := r.Next(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var rec struct {
			DDL          string `json:"ddl"`
			Position     struct{ Snapshot bool }
			TableChanges []struct {
				Type, ID string
				Table    struct {
					Columns []struct{ Name string }
				}
			}
		}
		if err := json.Unmarshal(msg.Payload(), &rec); err != nil {
			t.Fatal(err)
		}
		s := fmt.Sprintf("snapshot=%v ddl=%q", rec.Position.Snapshot, rec.DDL)
		for _, tc := range rec.TableChanges {
			var names []string
			for _, c := range tc.Table.Columns {
				names = append(names, c.Name)
			}
			s += fmt.Sprintf(" %s %s %v", tc.Type, tc.ID, names)
		}
		records = append(records, s)
	}
	want := []string{
		`snapshot=true ddl="" CREATE "hsrc"."hist" [id a b]`,
		`snapshot=false ddl="ALTER TABLE hist ADD COLUMN c varchar(10) NULL, DROP COLUMN b" ALTER "hsrc"."hist" [id a c]`,
		`snapshot=false ddl="ALTER TABLE hist ADD COLUMN e varchar(10), ORDER BY id" ALTER "hsrc"."hist" [id a c e]`,
	}
	if strings.Join(records, "\n") != strings.Join(want, "\n") {
		t.Fatalf("history:\n%s\nwant:\n%s", strings.Join(records, "\n"), strings.Join(want, "\n"))
	}

	// Without the history the same replay cannot decode the first event.
	rewound = &connector.MemoryOffsets{}
	if err := rewound.Save(context.Background(), old); err != nil {
		t.Fatal(err)
	}
	in = start(rewound, map[string]any{"schema.history.internal": "io.debezium.relational.history.MemorySchemaHistory"})
	select {
	case <-in.Done():
	case <-time.After(hangLimit):
		t.Fatal("the source without a history did not fail")
	}
	if err := in.Err(); err == nil || !strings.Contains(err.Error(), "schema history") {
		t.Fatalf("without a history: %v", err)
	}
}

// image is a row image as {k:v,...} in order of name ("-" for none).
func image(row map[string]any) string {
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
