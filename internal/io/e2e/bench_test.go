package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
	"github.com/apache/pulsar-client-go/pulsar"
	"github.com/apache/pulsar-client-go/pulsaradmin/pkg/utils"
	"github.com/jackc/pgx/v5"

	"github.com/magnetar-io/magnetar/internal/testenv"
)

// The IO benchmark of issue 21 (`make bench-io`; results in docs/benchmarks.md). Sizes come
// from the environment so a loaded machine can run it small:
//
//	IO_BENCH_SECONDS   how long pgbench writes (default 30)
//	IO_BENCH_CLIENTS   pgbench clients (default 4)
//	IO_BENCH_SINK_ROWS rows the JDBC sink writes (default 200000)
//	IO_BENCH_BATCH     the sink's batchSize and the plain client's rows per INSERT (default 200)
func benchEnv(name string, def int) int {
	if n, err := strconv.Atoi(os.Getenv(name)); err == nil && n > 0 {
		return n
	}
	return def
}

// pgbenchTables are what pgbench's built-in tpcb-like transaction changes: one UPDATE of
// each of the first three and one INSERT into pgbench_history, so a committed transaction is
// exactly one history row and four row changes.
var pgbenchTables = []string{"pgbench_accounts", "pgbench_tellers", "pgbench_branches", "pgbench_history"}

// BenchmarkIOCDCPostgres runs pgbench (tpcb-like, scale 1) against a real PostgreSQL for a
// fixed time while debezium-postgres streams every change into its per-table topics, and a
// consumer reads them. It reports the database's own write rate (row changes committed per
// second, over the span of pgbench's transactions), the CDC rate (changes arriving at the
// consumer per second, over the span of their arrivals), how long after pgbench's last
// commit the last change arrived, and the per-change latency from commit (the envelope's
// source.ts_ms, the commit time PostgreSQL sends) to arrival, p50/p99. It fails unless every
// committed change arrived exactly once per table, so the rates are for a complete stream.
func BenchmarkIOCDCPostgres(b *testing.B) {
	seconds, clients := benchEnv("IO_BENCH_SECONDS", 30), benchEnv("IO_BENCH_CLIENTS", 4)
	pgbench := testenv.DebianProgram(b, "/usr/lib/postgresql/15/bin/pgbench", "postgresql-15")
	pg := testenv.StartPostgres(b, testenv.PostgresOptions{})
	pg.CreateDatabase(b, "bench")
	runPgbench(b, pgbench, pg, "-i", "-s", "1", "-q")

	// The consumer subscribes first (from the earliest message), so nothing published
	// before it is missed; subscribing creates the topics.
	topics := make([]string, len(pgbenchTables))
	for i, t := range pgbenchTables {
		topics[i] = "persistent://public/default/benchcdc.public." + t
	}
	cons, err := client(b).Subscribe(pulsar.ConsumerOptions{Topics: topics, SubscriptionName: "bench",
		SubscriptionInitialPosition: pulsar.SubscriptionPositionEarliest, ReceiverQueueSize: 5000})
	if err != nil {
		b.Fatal(err)
	}
	defer cons.Close()
	a := admin(b)
	src := &utils.SourceConfig{Tenant: "public", Namespace: "default", Name: "bench-cdc", Archive: "builtin://debezium-postgres",
		Parallelism: 1, Configs: map[string]any{
			"database.hostname": "127.0.0.1", "database.port": fmt.Sprint(pg.Port), "database.user": "postgres",
			"database.password": "", "database.dbname": "bench", "topic.prefix": "benchcdc",
			"table.include.list": "public.pgbench_.*", "slot.name": "bench_cdc", "plugin.name": "pgoutput",
			// The accounts table's 100,000 rows are not part of the load: stream only.
			"snapshot.mode": "no_data",
		}}
	if err := a.Sources().CreateSource(src, src.Archive); err != nil {
		b.Fatal(err)
	}
	defer func() { _ = a.Sources().DeleteSource("public", "default", "bench-cdc") }()
	waitSlotStreaming(b, pg, "bench", "bench_cdc")

	rec := newArrivals()
	recvCtx, stopRecv := context.WithCancel(context.Background())
	recvDone := make(chan error, 1)
	go func() { recvDone <- rec.consume(recvCtx, cons) }()
	defer stopRecv()

	b.ResetTimer()
	// -n: no VACUUM/TRUNCATE before the run (a TRUNCATE would be a change of its own).
	runPgbench(b, pgbench, pg, "-n", "-c", strconv.Itoa(clients), "-j", strconv.Itoa(min(clients, 2)), "-T", strconv.Itoa(seconds))
	loadEnd := time.Now()
	committed, span := historySpan(b, pg)
	want := int64(len(pgbenchTables)) * committed
	eventually(b, "every committed change on the topics", func() (bool, error) {
		select {
		case err := <-recvDone:
			return false, fmt.Errorf("consumer stopped: %w", err)
		default:
		}
		got := rec.counts()
		for _, t := range pgbenchTables {
			if got[t] > committed {
				b.Fatalf("%s: %d changes arrived, %d committed: duplicates (%v)", t, got[t], committed, got)
			}
			if got[t] < committed {
				return false, fmt.Errorf("%d transactions committed; arrived %v", committed, got)
			}
		}
		return true, nil
	})
	b.StopTimer()
	stopRecv()

	first, last, hist := rec.result()
	dbRate := float64(want) / span.Seconds()
	cdcRate := float64(want) / last.Sub(first).Seconds()
	b.ReportMetric(float64(committed), "txns")
	b.ReportMetric(dbRate, "db-rows/s")
	b.ReportMetric(cdcRate, "cdc-rows/s")
	b.ReportMetric(100*cdcRate/dbRate, "cdc-%-of-db")
	// How long the stream ran behind pgbench's exit (0 when it kept up).
	b.ReportMetric(float64(max(0, last.Sub(loadEnd).Milliseconds())), "drain-ms")
	b.ReportMetric(float64(hist.ValueAtQuantile(50)), "latency-p50-ms")
	b.ReportMetric(float64(hist.ValueAtQuantile(99)), "latency-p99-ms")
	b.ReportMetric(float64(hist.Max()), "latency-max-ms")
}

// runPgbench runs pgbench against database bench, failing the benchmark with its output.
func runPgbench(b *testing.B, bin string, pg *testenv.Postgres, args ...string) {
	b.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), hangLimit+10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, append([]string{"-h", "127.0.0.1", "-p", strconv.Itoa(pg.Port), "-U", "postgres"}, append(args, "bench")...)...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		b.Fatalf("pgbench %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	if testing.Verbose() {
		b.Logf("pgbench %s:\n%s", strings.Join(args, " "), out)
	}
}

// waitSlotStreaming waits until the source's slot has reached its consistent point (its
// confirmed_flush_lsn is set) and a walsender holds it: with snapshot.mode=no_data, changes
// committed before that are not the stream's.
func waitSlotStreaming(b *testing.B, pg *testenv.Postgres, db, slot string) {
	b.Helper()
	eventually(b, "the replication slot streaming", func() (bool, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		c, err := pgx.Connect(ctx, pg.DSN(db))
		if err != nil {
			return false, err
		}
		defer c.Close(ctx)
		var ok bool
		err = c.QueryRow(ctx, `SELECT count(*) = 1 FROM pg_replication_slots
			WHERE slot_name = $1 AND active AND confirmed_flush_lsn IS NOT NULL`, slot).Scan(&ok)
		return ok, err
	})
}

// historySpan reads how many transactions pgbench committed (one history row each) and the
// span between the first and the last one's start (mtime is CURRENT_TIMESTAMP).
func historySpan(b *testing.B, pg *testenv.Postgres) (n int64, span time.Duration) {
	b.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := pgx.Connect(ctx, pg.DSN("bench"))
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close(ctx)
	var secs float64
	if err := c.QueryRow(ctx, "SELECT count(*), coalesce(extract(epoch FROM max(mtime) - min(mtime))::float8, 0) FROM pgbench_history").Scan(&n, &secs); err != nil {
		b.Fatal(err)
	}
	if n == 0 || secs <= 0 {
		b.Fatalf("pgbench committed %d transactions over %.3f s", n, secs)
	}
	return n, time.Duration(secs * float64(time.Second))
}

// arrivals records, per table, how many changes arrived, and the commit-to-arrival latency
// of each in milliseconds: floor(arrival ms) - source.ts_ms, both truncated to the
// millisecond, so the difference is unbiased over the phase of the clock.
type arrivals struct {
	mu          sync.Mutex
	byTable     map[string]int64
	first, last time.Time
	hist        *hdrhistogram.Histogram
}

func newArrivals() *arrivals {
	return &arrivals{byTable: map[string]int64{}, hist: hdrhistogram.New(0, 3_600_000, 3)}
}

func (r *arrivals) consume(ctx context.Context, cons pulsar.Consumer) error {
	var env struct {
		Op     string `json:"op"`
		Source struct {
			TsMs  int64  `json:"ts_ms"`
			Table string `json:"table"`
		} `json:"source"`
	}
	for {
		m, err := cons.Receive(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		now := time.Now()
		cons.AckID(m.ID())
		if len(m.Payload()) == 0 {
			continue // a tombstone (pgbench deletes nothing)
		}
		env.Op, env.Source.TsMs, env.Source.Table = "", 0, ""
		if err := json.Unmarshal(m.Payload(), &env); err != nil {
			return fmt.Errorf("not a Debezium envelope: %w: %.200s", err, m.Payload())
		}
		r.mu.Lock()
		r.byTable[env.Source.Table]++
		if r.first.IsZero() {
			r.first = now
		}
		r.last = now
		_ = r.hist.RecordValue(max(0, now.UnixMilli()-env.Source.TsMs))
		r.mu.Unlock()
	}
}

func (r *arrivals) counts() map[string]int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make(map[string]int64, len(r.byTable))
	for k, v := range r.byTable {
		out[k] = v
	}
	return out
}

func (r *arrivals) result() (first, last time.Time, hist *hdrhistogram.Histogram) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.first, r.last, r.hist
}

// BenchmarkIOJDBCSink fills a topic with JSON rows, then writes the same rows into
// PostgreSQL twice in one run: with a plain Go client (pgx, one multi-row INSERT of
// IO_BENCH_BATCH rows per transaction, one connection: the database's own rate for these
// rows and batches) and with the jdbc-postgres sink reading the topic (insertMode INSERT,
// batchSize IO_BENCH_BATCH). Both rates are rows over the span between the first and the
// last row's insert time (a clock_timestamp() column default), so neither counts connection
// or instance start. It fails unless each table holds every row with its values.
func BenchmarkIOJDBCSink(b *testing.B) {
	n, batch := benchEnv("IO_BENCH_SINK_ROWS", 200000), benchEnv("IO_BENCH_BATCH", 200)
	pg := testenv.StartPostgres(b, testenv.PostgresOptions{})
	pg.CreateDatabase(b, "bench")
	const cols = "id bigint PRIMARY KEY, name text NOT NULL, balance bigint NOT NULL, note text, written timestamptz NOT NULL DEFAULT clock_timestamp()"
	pg.Exec(b, "bench", "CREATE TABLE plain_rows ("+cols+")", "CREATE TABLE sink_rows ("+cols+")")
	row := func(i int) (int64, string, int64, string) {
		return int64(i), fmt.Sprintf("customer-%d", i), int64(i) * 7, fmt.Sprintf("note %d %s", i, strings.Repeat("x", i%40))
	}

	topic := "persistent://public/default/bench-jdbc-in"
	prod, err := client(b).CreateProducer(pulsar.ProducerOptions{Topic: topic})
	if err != nil {
		b.Fatal(err)
	}
	var failed atomic.Int64
	for i := 0; i < n; i++ {
		id, name, bal, note := row(i)
		payload, _ := json.Marshal(map[string]any{"id": id, "name": name, "balance": bal, "note": note})
		prod.SendAsync(context.Background(), &pulsar.ProducerMessage{Payload: payload}, func(_ pulsar.MessageID, _ *pulsar.ProducerMessage, err error) {
			if err != nil {
				failed.Add(1)
			}
		})
	}
	if err := prod.Flush(); err != nil || failed.Load() > 0 {
		b.Fatalf("filling the topic: %d sends failed, flush: %v", failed.Load(), err)
	}
	prod.Close()

	b.ResetTimer()
	plainInsert(b, pg, n, batch, row)
	a := admin(b)
	sink := &utils.SinkConfig{Tenant: "public", Namespace: "default", Name: "bench-jdbc", Archive: "builtin://jdbc-postgres",
		Inputs: []string{topic}, Parallelism: 1, SourceSubscriptionPosition: "Earliest",
		Configs: map[string]any{
			"jdbcUrl": fmt.Sprintf("jdbc:postgresql://127.0.0.1:%d/bench", pg.Port), "userName": "postgres", "password": "",
			"tableName": "sink_rows", "insertMode": "INSERT", "batchSize": batch, "timeoutMs": 100,
		}}
	if err := a.Sinks().CreateSink(sink, sink.Archive); err != nil {
		b.Fatal(err)
	}
	defer func() { _ = a.Sinks().DeleteSink("public", "default", "bench-jdbc") }()
	eventually(b, "every row in sink_rows", func() (bool, error) {
		got, _ := tableRate(b, pg, "sink_rows")
		if got > int64(n) {
			b.Fatalf("sink_rows has %d rows, the topic %d", got, n)
		}
		return got == int64(n), fmt.Errorf("sink_rows has %d of %d rows", got, n)
	})
	b.StopTimer()

	_, plainRate := tableRate(b, pg, "plain_rows")
	_, sinkRate := tableRate(b, pg, "sink_rows")
	for _, t := range []string{"plain_rows", "sink_rows"} {
		checkRows(b, pg, t, n)
	}
	b.ReportMetric(plainRate, "plain-rows/s")
	b.ReportMetric(sinkRate, "sink-rows/s")
	b.ReportMetric(100*sinkRate/plainRate, "sink-%-of-plain")
}

// plainInsert is the baseline: the rows in multi-row INSERTs of batch rows, a transaction
// each, over one connection (what the sink does per batch).
func plainInsert(b *testing.B, pg *testenv.Postgres, n, batch int, row func(int) (int64, string, int64, string)) {
	b.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), hangLimit)
	defer cancel()
	c, err := pgx.Connect(ctx, pg.DSN("bench"))
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close(ctx)
	var sql strings.Builder
	args := make([]any, 0, 4*batch)
	for from := 0; from < n; from += batch {
		to := min(n, from+batch)
		sql.Reset()
		sql.WriteString("INSERT INTO plain_rows (id, name, balance, note) VALUES ")
		args = args[:0]
		for i := from; i < to; i++ {
			if i > from {
				sql.WriteByte(',')
			}
			k := len(args)
			fmt.Fprintf(&sql, "($%d,$%d,$%d,$%d)", k+1, k+2, k+3, k+4)
			id, name, bal, note := row(i)
			args = append(args, id, name, bal, note)
		}
		tx, err := c.Begin(ctx)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := tx.Exec(ctx, sql.String(), args...); err != nil {
			b.Fatal(err)
		}
		if err := tx.Commit(ctx); err != nil {
			b.Fatal(err)
		}
	}
}

// tableRate is a table's row count and its rows per second over the span of their insert
// times.
func tableRate(b *testing.B, pg *testenv.Postgres, table string) (int64, float64) {
	b.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := pgx.Connect(ctx, pg.DSN("bench"))
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close(ctx)
	var n int64
	var span float64
	q := "SELECT count(*), coalesce(extract(epoch FROM max(written) - min(written))::float8, 0) FROM " + pgx.Identifier{table}.Sanitize()
	if err := c.QueryRow(ctx, q).Scan(&n, &span); err != nil {
		b.Fatal(err)
	}
	if span <= 0 {
		return n, 0
	}
	return n, float64(n) / span
}

// checkRows fails unless table holds rows 0..n-1 with the values row wrote (the sums of
// their columns, and every id once).
func checkRows(b *testing.B, pg *testenv.Postgres, table string, n int) {
	b.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := pgx.Connect(ctx, pg.DSN("bench"))
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close(ctx)
	var count, ids, balances, names, notes int64
	q := `SELECT count(DISTINCT id), coalesce(sum(id), 0), coalesce(sum(balance), 0),
		count(*) FILTER (WHERE name = 'customer-' || id), count(*) FILTER (WHERE note = 'note ' || id || ' ' || repeat('x', (id % 40)::int))
		FROM ` + pgx.Identifier{table}.Sanitize()
	if err := c.QueryRow(ctx, q).Scan(&count, &ids, &balances, &names, &notes); err != nil {
		b.Fatal(err)
	}
	wantIDs := int64(n) * int64(n-1) / 2
	if count != int64(n) || ids != wantIDs || balances != 7*wantIDs || names != int64(n) || notes != int64(n) {
		b.Fatalf("%s: %d distinct ids (want %d), id sum %d (want %d), balance sum %d (want %d), %d names and %d notes right",
			table, count, n, ids, wantIDs, balances, 7*wantIDs, names, notes)
	}
}
