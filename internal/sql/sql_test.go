package sql

import (
	"database/sql"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/go-sql-driver/mysql"

	"github.com/magnetar-io/magnetar/internal/config"
	"github.com/magnetar-io/magnetar/internal/schema"
)

const ordersSchema = `{"type":"record","name":"Order","fields":[{"name":"id","type":"long"},{"name":"item","type":["null","string"]},{"name":"qty","type":"int"},{"name":"price","type":"double"}]}`

// ordersSource has public/default/orders: 3 partitions x 1000 JSON messages, batches of
// 10, ledgers of 20 entries, publish times 1000 ms apart per message within a partition.
func ordersSource(t *testing.T) *memSource {
	src := newMemSource()
	info := TopicInfo{Partitions: 3, Schema: schema.Schema{Type: schema.JSON, Data: []byte(ordersSchema)}}
	for p := 0; p < 3; p++ {
		var msgs []msg
		for i := 0; i < 1000; i++ {
			id := p*1000 + i
			msgs = append(msgs, msg{payload: []byte(fmt.Sprintf(`{"id":%d,"item":"item-%d","qty":%d,"price":%d.5}`, id, id%7, id%5, id%3)),
				key: fmt.Sprintf("k%d", id%4), pub: 1_700_000_000_000 + int64(i)*1000, props: map[string]string{"p": "v"}})
		}
		src.add(t, "public/default/orders", info, p, 10, 20, msgs)
	}
	items := TopicInfo{Schema: schema.Schema{Type: schema.String}}
	var msgs []msg
	for i := 0; i < 7; i++ {
		msgs = append(msgs, msg{payload: []byte(fmt.Sprintf("item-%d", i)), key: fmt.Sprintf("name-%d", i), pub: 1_700_000_000_000})
	}
	src.add(t, "public/default/items", items, -1, 0, 3, msgs)
	return src
}

func TestQueries(t *testing.T) {
	s, db := serve(t, ordersSource(t), nil)
	check := func(q string, want [][]string) {
		t.Helper()
		if got := queryRows(t, db, q); !reflect.DeepEqual(got, want) {
			t.Fatalf("%s:\n got %v\nwant %v", q, got, want)
		}
	}
	check("SHOW DATABASES LIKE 'public%'", [][]string{{"public/default"}})
	check("SHOW TABLES FROM `public/default`", [][]string{{"items"}, {"orders"}})
	check("SELECT count(*) FROM `public/default`.orders", [][]string{{"3000"}})
	check("SELECT count(*), sum(qty) FROM `public/default`.orders WHERE item = 'item-3'", [][]string{{"429", "859"}})
	check("SELECT __partition__, count(*) FROM `public/default`.orders GROUP BY __partition__ ORDER BY __partition__",
		[][]string{{"0", "1000"}, {"1", "1000"}, {"2", "1000"}})
	check("SELECT id, item FROM `public/default`.orders ORDER BY id DESC LIMIT 2", [][]string{{"2999", "item-3"}, {"2998", "item-2"}})
	check("SELECT o.item, i.__key__, count(*) FROM `public/default`.orders o JOIN `public/default`.items i ON o.item = i.__value__ WHERE o.id < 14 GROUP BY o.item, i.__key__ ORDER BY o.item",
		[][]string{{"item-0", "name-0", "2"}, {"item-1", "name-1", "2"}, {"item-2", "name-2", "2"}, {"item-3", "name-3", "2"}, {"item-4", "name-4", "2"}, {"item-5", "name-5", "2"}, {"item-6", "name-6", "2"}})
	check("SELECT __message_id__, __sequence_id__, __key__, __properties__, __producer_name__, __event_time__ FROM `public/default`.orders WHERE id = 1012",
		[][]string{{"(1101,1,2)", "12", "k0", `{"p":"v"}`, "p", "NULL"}})
	check("USE `public/default`", nil)
	check("SELECT __value__ FROM items WHERE __key__ = 'name-2'", [][]string{{"item-2"}})

	// Time-range pushdown: 1% of a partition's messages, found by publish-time search.
	check("SELECT count(*) FROM orders WHERE __partition__ = 1 AND __publish_time__ >= '2023-11-14 22:13:20' AND __publish_time__ < '2023-11-14 22:13:30'",
		[][]string{{"10"}})
	st, _ := lastStats(t, s, db)
	if st.Entries > 2 || st.SearchReads == 0 || st.SearchReads > 40 {
		t.Fatalf("time range read %+v: want at most 2 entries (one batch of 10) after a search", st)
	}
	// Message-id range pushdown.
	check("SELECT count(*) FROM orders WHERE __message_id__ >= '(1101,0,0)' AND __message_id__ <= '(1101,1,4)'", [][]string{{"15"}})
	if st, _ := lastStats(t, s, db); st.Entries != 2 {
		t.Fatalf("message-id range read %+v, want 2 entries", st)
	}
	// LIMIT stops the scan early.
	if got := queryRows(t, db, "SELECT id FROM orders WHERE __partition__ = 0 LIMIT 1"); len(got) != 1 {
		t.Fatalf("LIMIT 1: %v", got)
	}
	if st, _ := lastStats(t, s, db); st.Entries > 300 {
		t.Fatalf("LIMIT 1 read %+v", st)
	}
	// Errors: position of a syntax error, unknown table, unknown column.
	for q, want := range map[string]string{
		"SELEC 1":                            "syntax error at position",
		"SELECT * FROM nope":                 "table not found: nope",
		"SELECT nope FROM orders":            `column "nope" could not be found`,
		"INSERT INTO orders (id) VALUES (1)": "doesn't support INSERT",
	} {
		if _, err := db.Exec(q); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", q, err, want)
		}
	}
}

func lastStats(t *testing.T, s *Server, db interface{ Ping() error }) (Stats, bool) {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, st := range s.stats {
		return st, true
	}
	return Stats{}, false
}

func TestLimitsCancelQueries(t *testing.T) {
	_, db := serve(t, ordersSource(t), func(c *config.SQLConfig) { c.MaxScannedRows = 500 })
	_, err := db.Exec("SELECT count(*) FROM `public/default`.orders")
	if err == nil || !strings.Contains(err.Error(), "sqlMaxScannedRows is 500") {
		t.Fatalf("over the row limit: %v", err)
	}
	if got := queryRows(t, db, "SELECT count(*) FROM `public/default`.orders WHERE __partition__ = 2 AND __message_id__ < '(1201,5,0)'"); got[0][0] != "50" {
		t.Fatalf("within the limit: %v", got)
	}
	_, db = serve(t, ordersSource(t), func(c *config.SQLConfig) { c.MaxScannedBytes = 1000 })
	if _, err := db.Exec("SELECT count(*) FROM `public/default`.orders"); err == nil || !strings.Contains(err.Error(), "sqlMaxScannedBytes") {
		t.Fatalf("over the byte limit: %v", err)
	}
	_, db = serve(t, ordersSource(t), func(c *config.SQLConfig) { c.MaxMemoryPerQueryMB = 1 })
	if _, err := db.Exec("SELECT a.id FROM `public/default`.orders a JOIN `public/default`.orders b ON a.qty = b.qty ORDER BY a.item, b.item"); err == nil || !strings.Contains(err.Error(), "sqlMaxMemoryPerQueryMB") {
		t.Fatalf("over the memory limit: %v", err)
	}
}

// TestTimeoutAndAdmission: a statement past sqlQueryTimeoutSeconds is cancelled with an
// error naming the key, and one beyond sqlMaxConcurrentQueries is refused (MySQL 1040)
// while the other runs, which then still ends normally.
func TestTimeoutAndAdmission(t *testing.T) {
	src := ordersSource(t)
	src.stall, src.stalled = true, make(chan struct{}, 1)
	_, db := serve(t, src, func(c *config.SQLConfig) { c.QueryTimeoutSeconds = 1; c.MaxConcurrentQueries = 1 })
	db.SetMaxOpenConns(2)
	done := make(chan error, 1)
	go func() {
		_, err := db.Exec("SELECT count(*) FROM `public/default`.orders")
		done <- err
	}()
	<-src.stalled // the first statement is reading
	_, err := db.Exec("SELECT count(*) FROM `public/default`.items")
	var me *mysql.MySQLError
	if !errors.As(err, &me) || me.Number != 1040 || !strings.Contains(me.Message, "sqlMaxConcurrentQueries is 1") {
		t.Fatalf("second statement: %v, want error 1040 naming sqlMaxConcurrentQueries", err)
	}
	err = <-done
	if !errors.As(err, &me) || me.Number != 1317 || !strings.Contains(me.Message, "sqlQueryTimeoutSeconds is 1") {
		t.Fatalf("stalled statement: %v, want error 1317 naming sqlQueryTimeoutSeconds", err)
	}
	src.mu.Lock()
	src.stall = false
	src.mu.Unlock()
	if got := queryRows(t, db, "SELECT count(*) FROM `public/default`.items"); got[0][0] != "7" {
		t.Fatalf("after the timeout: %v", got)
	}
}

// TestRegexpFunctions: MySQL's REGEXP functions over internal/sql/icuregex (Go's regexp in
// place of the ICU module go-mysql-server links, see its doc).
func TestRegexpFunctions(t *testing.T) {
	_, db := serve(t, ordersSource(t), nil)
	got := queryRows(t, db, `SELECT REGEXP_LIKE('Item-42', '^item-[0-9]+$', 'i'), REGEXP_LIKE('item-x', '^item-[0-9]+$'),
		REGEXP_INSTR('a1b22c333', '[0-9]+', 1, 2), REGEXP_INSTR('a1b22c333', '[0-9]+', 1, 2, 1), REGEXP_INSTR('déjà vu', 'vu'),
		REGEXP_SUBSTR('a1b22c333', '[0-9]+', 4), REGEXP_SUBSTR('abc', '[0-9]+'),
		REGEXP_REPLACE('a1b22c333', '[0-9]+', '#'), REGEXP_REPLACE('a1b22c333', '[0-9]+', '#', 1, 2), REGEXP_REPLACE('k=v', '(\\w)=(\\w)', '$2=$1'),
		'item-3' REGEXP 'm-[3-5]'`)
	want := [][]string{{"1", "0", "4", "6", "6", "22", "NULL", "a#b#c#", "a1b#c333", "v=k", "1"}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got  %q\nwant %q", got, want)
	}
	if got := queryRows(t, db, "SELECT count(*) FROM `public/default`.orders WHERE item REGEXP '^item-[0-2]$'"); got[0][0] != "1287" {
		t.Fatalf("REGEXP over a topic: %v", got)
	}
	if _, err := db.Exec("SELECT REGEXP_LIKE('a', '(')"); err == nil || !strings.Contains(err.Error(), "regular expression is invalid") {
		t.Fatalf("a bad pattern: %v", err)
	}
}

// TestScanThreadsBoundAllScans: sqlScanThreads caps the scan workers reading at once over
// all queries together (each query here asks for 8 workers over 15 splits, two run at
// once); joins and a correlated subquery, which scan one table while another scan waits
// for the engine, still complete on a single slot, as a worker waiting for the engine gives
// its slot up.
func TestScanThreadsBoundAllScans(t *testing.T) {
	src := ordersSource(t)
	// big is more than one worker's channel and batch hold (3 batches of rows).
	var big []msg
	for i := range 6000 {
		big = append(big, msg{payload: []byte(fmt.Sprint(i)), pub: 1_700_000_000_000})
	}
	src.add(t, "public/default/big", TopicInfo{Schema: schema.Schema{Type: schema.String}}, -1, 0, 1000, big)
	src.gate, src.entered = make(chan struct{}), make(chan struct{}, 1024)
	done := make(chan struct{})
	defer close(done)
	go func() { // let every read through, one at a time, once it is counted
		for {
			select {
			case <-src.entered:
				select {
				case src.gate <- struct{}{}:
				case <-done:
					return
				}
			case <-done:
				return
			}
		}
	}()
	// With one worker per scan, its channel holds 2 batches: big's worker soon waits.
	for _, c := range []struct{ threads, parallelism int }{{2, 8}, {1, 1}} {
		threads := c.threads
		src.peak.Store(0)
		s, db := serve(t, src, func(sc *config.SQLConfig) { sc.ScanThreads, sc.SplitParallelism = threads, c.parallelism })
		second, err := sql.Open("mysql", "u@tcp("+s.ln.Addr().String()+")/")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = second.Close() })
		var wg sync.WaitGroup
		counts := make([]string, 2)
		for i, h := range []*sql.DB{db, second} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if err := h.QueryRow("SELECT count(*) FROM `public/default`.orders").Scan(&counts[i]); err != nil {
					counts[i] = err.Error()
				}
			}()
		}
		wg.Wait()
		if counts[0] != "3000" || counts[1] != "3000" {
			t.Fatalf("sqlScanThreads %d: counts %v, want 3000 each", threads, counts)
		}
		if got := queryRows(t, db, "SELECT count(*) FROM `public/default`.items i JOIN `public/default`.orders o ON i.__value__ = o.item"); got[0][0] != "3000" {
			t.Fatalf("sqlScanThreads %d: the join counted %v", threads, got)
		}
		// A correlated subquery scans items for each row of big, while big's worker, ahead
		// of the engine, waits for it to take more rows.
		if got := queryRows(t, db, "SELECT (SELECT count(*) FROM `public/default`.items i WHERE i.__value__ = b.__value__) FROM `public/default`.big b LIMIT 3"); len(got) != 3 {
			t.Fatalf("sqlScanThreads %d: the subquery gave %v", threads, got)
		}
		if p := src.peak.Load(); p != int64(threads) {
			t.Fatalf("sqlScanThreads %d: %d scan reads at once, want at most (and, with more workers waiting, exactly) %d", threads, p, threads)
		}
	}
}
