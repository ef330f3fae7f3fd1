package lakehouse_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"

	"github.com/magnetar-io/magnetar/internal/config"
	"github.com/magnetar-io/magnetar/internal/lakehouse"
)

// TestMaintenance: on a real table with files of two schema versions, compaction merges the
// small files into one (older rows get NULL in the newer column), retention removes the
// rows published before a cutoff (rewriting the file that straddles it), and snapshot
// expiry drops the old snapshots and deletes the files only they referenced. Every step is
// checked by reading the table back with iceberg-go through the REST catalog.
func TestMaintenance(t *testing.T) {
	var cfg *config.StandaloneConfig
	e := startEnv(t, func(c *config.StandaloneConfig) {
		c.Broker.Iceberg.CompactionIntervalSeconds = 0 // the test runs maintenance itself
		c.Broker.Iceberg.CompactionMinFiles = 2
		cfg = c
	})
	const topic = "persistent://public/default/maint"
	id := lakehouse.Ident{Tenant: "public", Namespace: "default", Table: "maint"}
	ctx := context.Background()
	c := e.client(t)
	if code, body := e.do(t, "POST", "/admin/v2/persistent/public/default/maint/icebergPolicies", `{"enabled":true,"partitioning":"none"}`); code != 204 {
		t.Fatalf("set topic policy: %d %s", code, body)
	}
	p1, err := c.CreateProducer(pulsar.ProducerOptions{Topic: topic, Schema: pulsar.NewAvroSchema(avroSchema, nil), DisableBatching: true})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 10 {
		if _, err := p1.Send(ctx, &pulsar.ProducerMessage{Value: order{ID: int64(i), Item: "v1"}}); err != nil {
			t.Fatal(err)
		}
	}
	e.waitRows(t, "public/default/maint", 10)
	cutoff := time.Now()
	time.Sleep(10 * time.Millisecond) // publish times are milliseconds: none of the next rows shares the cutoff's
	p2, err := c.CreateProducer(pulsar.ProducerOptions{Topic: topic, Schema: pulsar.NewAvroSchema(avroSchemaV2, nil), DisableBatching: true})
	if err != nil {
		t.Fatal(err)
	}
	for i := 10; i < 20; i++ {
		q := int32(i * 2)
		if _, err := p2.Send(ctx, &pulsar.ProducerMessage{Value: orderV2{ID: int64(i), Item: "v2", Qty: &q}}); err != nil {
			t.Fatal(err)
		}
		if i == 14 {
			e.waitRows(t, "public/default/maint", 15) // a commit in between: another file
		}
	}
	e.waitRows(t, "public/default/maint", 20)

	// The writer keeps running; maintenance is a second service on the same catalog, as on
	// the broker writing the table's lowest partition.
	m, err := lakehouse.NewMaintainer(e.sa.Store(), cfg.Broker.Iceberg)
	if err != nil {
		t.Fatal(err)
	}
	before, err := m.State(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if len(before.DataFiles) < 3 {
		t.Fatalf("%d data files before compaction, want at least 3 (one per commit)", len(before.DataFiles))
	}

	code, body := e.do(t, "POST", "/admin/v2/persistent/public/default/maint/icebergCompaction", "")
	if code != 200 {
		t.Fatalf("compaction: %d %s", code, body)
	}
	after, err := m.State(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if len(after.DataFiles) != 1 || after.Operation != "replace" {
		t.Fatalf("after compaction (%s): %+v", body, after)
	}
	checkRows(t, readTable(t, e, "public", "default", "maint"), 0, 20)

	if err := m.ExpireRows(ctx, id, cutoff); err != nil {
		t.Fatal(err)
	}
	checkRows(t, readTable(t, e, "public", "default", "maint"), 10, 20)

	if err := m.ExpireSnapshots(ctx, id, 0); err != nil {
		t.Fatal(err)
	}
	final, err := m.State(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if final.Snapshots != 1 || final.LogEntries != 1 {
		t.Fatalf("after expiry: %+v", final)
	}
	for _, f := range slices.Concat(before.DataFiles, after.DataFiles) {
		if ok, err := m.Exists(ctx, f); ok || err != nil {
			t.Fatalf("replaced data file %s still there after expiry (%v)", f, err)
		}
	}
	checkRows(t, readTable(t, e, "public", "default", "maint"), 10, 20)
}

// checkRows wants exactly the rows with ids from..to-1, each once, v1 rows (id < 10)
// without qty and v2 rows with qty 2*id.
func checkRows(t *testing.T, rows []row, from, to int64) {
	t.Helper()
	seen := map[int64]bool{}
	for _, r := range rows {
		id := r.Int("id")
		if id < from || id >= to || seen[id] {
			t.Fatalf("row %v unexpected or twice (want ids %d..%d)", r, from, to-1)
		}
		seen[id] = true
		if (id < 10 && (!r.IsNull("qty") || r.Str("item") != "v1")) || (id >= 10 && (r.Int("qty") != id*2 || r.Str("item") != "v2")) {
			t.Fatalf("row %v", r)
		}
	}
	if int64(len(seen)) != to-from {
		t.Fatalf("%d rows, want %d", len(seen), to-from)
	}
}
