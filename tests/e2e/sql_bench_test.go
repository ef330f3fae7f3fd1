package e2e

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
)

// BenchmarkSQL (issue 22, make bench-sql): SQL_BENCH_MESSAGES JSON-schema messages
// (default 200,000; the figure is 10 million) in one topic of a standalone
// process, then
//   - reader: a Go reader client reads the topic from the earliest message (msg/s);
//   - count: SELECT count(*) (rows/s, and its ratio to the reader's rate; target >= 5x);
//   - agg: a filtered aggregation with GROUP BY (rows/s; target >= 1x the reader);
//   - range: a time range holding ~1% of the messages: the share of entries it read
//     (target <= 2%);
//   - publish p99 while count(*) runs in a loop, against the same publishing idle.
//
// One iteration; run it with -benchtime 1x on a quiet machine.
func BenchmarkSQL(b *testing.B) {
	total := 200_000
	if v := os.Getenv("SQL_BENCH_MESSAGES"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1000 {
			b.Fatalf("SQL_BENCH_MESSAGES=%q: want a number >= 1000", v)
		}
		total = n
	}
	for range b.N {
		benchSQLOnce(b, total)
	}
}

func benchSQLOnce(b *testing.B, total int) {
	dir := b.TempDir()
	p, broker, httpAddr := startStandalone(b, dir, "--functions-worker=false")
	sqlAddr := ""
	for _, line := range strings.Split(p.log(), "\n") {
		if _, rest, ok := strings.Cut(line, `"sql":"`); ok {
			sqlAddr, _, _ = strings.Cut(rest, `"`)
		}
	}
	c, err := pulsar.NewClient(pulsar.ClientOptions{URL: "pulsar://" + broker, OperationTimeout: time.Minute})
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	const topic = "persistent://public/default/bench"
	const def = `{"type":"record","name":"Order","fields":[{"name":"id","type":"long"},{"name":"item","type":"string"},{"name":"qty","type":"int"},{"name":"price","type":"double"},{"name":"note","type":"string"}]}`
	type order struct {
		ID    int64   `json:"id"`
		Item  string  `json:"item"`
		Qty   int32   `json:"qty"`
		Price float64 `json:"price"`
		Note  string  `json:"note"`
	}
	prod, err := c.CreateProducer(pulsar.ProducerOptions{Topic: topic, Schema: pulsar.NewJSONSchema(def, nil),
		BatchingMaxMessages: 100, BatchingMaxPublishDelay: 2 * time.Millisecond, MaxPendingMessages: 10000})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	var from, to time.Time
	start := time.Now()
	for i := range total {
		if i == total/2 {
			_ = prod.FlushWithCtx(ctx)
			from = time.Now()
		}
		if i == total/2+total/100 {
			_ = prod.FlushWithCtx(ctx)
			to = time.Now()
		}
		prod.SendAsync(ctx, &pulsar.ProducerMessage{Value: &order{ID: int64(i), Item: "item-" + strconv.Itoa(i%50), Qty: int32(i % 10),
			Price: float64(i%100) / 4, Note: "a note of some forty bytes, more or less"}}, func(_ pulsar.MessageID, _ *pulsar.ProducerMessage, err error) {
			if err != nil {
				b.Errorf("send: %v", err)
			}
		})
	}
	if err := prod.FlushWithCtx(ctx); err != nil {
		b.Fatal(err)
	}
	b.Logf("published %d messages in %s", total, time.Since(start).Round(time.Millisecond))

	// The Go reader client, from the earliest message.
	r, err := c.CreateReader(pulsar.ReaderOptions{Topic: topic, StartMessageID: pulsar.EarliestMessageID(), ReceiverQueueSize: 1000})
	if err != nil {
		b.Fatal(err)
	}
	start = time.Now()
	for range total {
		if _, err := r.Next(ctx); err != nil {
			b.Fatal(err)
		}
	}
	readerRate := float64(total) / time.Since(start).Seconds()
	r.Close()

	db, err := sql.Open("mysql", "bench@tcp("+sqlAddr+")/public%2Fdefault")
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	timed := func(q string) (float64, [][]string) {
		start := time.Now()
		rows := sqlRows(b, db, q)
		return float64(total) / time.Since(start).Seconds(), rows
	}
	countRate, rows := timed("SELECT count(*) FROM bench")
	if rows[0][0] != strconv.Itoa(total) {
		b.Fatalf("count(*) = %v", rows)
	}
	aggRate, _ := timed("SELECT item, sum(qty), avg(price) FROM bench WHERE price > 10 AND qty < 5 GROUP BY item")

	before := sqlCounters(b, httpAddr)
	rows = sqlRows(b, db, fmt.Sprintf("SELECT count(*) FROM bench WHERE __publish_time__ >= '%s' AND __publish_time__ < '%s'",
		from.UTC().Format("2006-01-02 15:04:05.000"), to.UTC().Format("2006-01-02 15:04:05.000")))
	after := sqlCounters(b, httpAddr)
	var entries int64
	for _, l := range internalStats(b, httpAddr, topic).Ledgers {
		entries += l.Entries
	}
	rangeRead := after["pulsar_sql_scanned_entries_total"] - before["pulsar_sql_scanned_entries_total"] +
		after["pulsar_sql_publish_time_search_reads_total"] - before["pulsar_sql_publish_time_search_reads_total"]
	b.Logf("time range of ~1%%: %s messages, %v of %d entries read", rows[0][0], rangeRead, entries)

	// Publish latency while count(*) runs in a loop, against idle.
	idle := publishP99(b, prod, 5000)
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-stop:
				return
			default:
			}
			_, _ = db.Exec("SELECT count(*) FROM bench")
		}
	}()
	busy := publishP99(b, prod, 5000)
	close(stop)
	<-done
	prod.Close()

	b.ReportMetric(readerRate, "reader-msg/s")
	b.ReportMetric(countRate, "count-rows/s")
	b.ReportMetric(countRate/readerRate, "count/reader")
	b.ReportMetric(aggRate, "agg-rows/s")
	b.ReportMetric(aggRate/readerRate, "agg/reader")
	b.ReportMetric(100*rangeRead/float64(entries), "range-entries-%")
	b.ReportMetric(float64(idle.Microseconds())/1000, "publish-p99-idle-ms")
	b.ReportMetric(float64(busy.Microseconds())/1000, "publish-p99-during-sql-ms")
}

// publishP99 sends n messages one at a time and returns the 99th percentile latency.
func publishP99(b *testing.B, prod pulsar.Producer, n int) time.Duration {
	lat := make([]time.Duration, 0, n)
	for i := range n {
		start := time.Now()
		if _, err := prod.Send(context.Background(), &pulsar.ProducerMessage{Value: map[string]any{"id": i, "item": "x", "qty": 1, "price": 1.0, "note": "n"}}); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(start))
	}
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	return lat[len(lat)*99/100]
}
