// Package jdbc is Pulsar's JDBC sink for PostgreSQL (jdbc-postgres) and MySQL/MariaDB
// (jdbc-mariadb): records become inserts, upserts, updates or deletes by key, written in
// batches in one transaction each.
//
// Configs (Pulsar's JdbcSinkConfig names): jdbcUrl (jdbc:postgresql://host:port/db,
// jdbc:mariadb://..., jdbc:mysql://...), userName, password, tableName (required), key and
// nonKey (comma-separated columns; default: the table's primary key and every other column
// of the record), insertMode (INSERT, UPSERT, UPDATE; default INSERT), nullValueAction (FAIL,
// DELETE), batchSize (200), timeoutMs (500: the longest a record waits for its batch),
// useTransactions (true), excludeNonDeclaredFields (false).
//
// Records are JSON objects (the row), or Debezium change events (from the debezium-*
// sources): c/r/u upsert the row after the change, d deletes by the key, whatever
// insertMode says; a tombstone deletes by the message key when nullValueAction is DELETE.
// Debezium's numeric dates and times become the column's type again (the events'
// debezium.logical.types property says the unit), base64 becomes bytes, and a column whose
// value the database did not send (__debezium_unavailable_value) is left as it is.
//
// Within a batch only each key's last change is applied (in upsert and Debezium modes), so a
// batch is a set of deletes and one multi-row upsert per column set, in one transaction: a
// batch that failed because the database went away is retried whole, with backoff, on a new
// connection, until the database is back; a record the database refuses (a constraint, a bad
// value) is found by writing the batch one record at a time and goes to the dead-letter topic.
// Upserts and deletes by key are idempotent, so EFFECTIVELY_ONCE holds with insertMode UPSERT
// or Debezium events (a replayed record rewrites the same row).
package jdbc

import (
	"context"
	"database/sql"
	"fmt"
	"net"
	"net/url"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/go-sql-driver/mysql"
	_ "github.com/jackc/pgx/v5/stdlib" // database/sql driver "pgx"

	"github.com/magnetar-io/magnetar/internal/io/connector"
)

// Definitions are jdbc-postgres and jdbc-mariadb.
func Definitions() []*connector.Definition {
	fields := []connector.Field{
		{Name: "jdbcUrl", TypeName: "String", Attributes: map[string]string{"required": "true"}},
		{Name: "userName", TypeName: "String"},
		{Name: "password", TypeName: "String", Attributes: map[string]string{"sensitive": "true"}},
		{Name: "tableName", TypeName: "String", Attributes: map[string]string{"required": "true"}},
		{Name: "key", TypeName: "String"}, {Name: "nonKey", TypeName: "String"},
		{Name: "insertMode", TypeName: "String", Attributes: map[string]string{"defaultValue": "INSERT"}},
		{Name: "nullValueAction", TypeName: "String", Attributes: map[string]string{"defaultValue": "FAIL"}},
		{Name: "batchSize", TypeName: "int", Attributes: map[string]string{"defaultValue": "200"}},
		{Name: "timeoutMs", TypeName: "int", Attributes: map[string]string{"defaultValue": "500"}},
	}
	def := func(name, desc, class, scheme string) *connector.Definition {
		return &connector.Definition{Name: name, Description: desc, SinkClass: class, SinkFields: fields, EffectivelyOnceSink: true,
			NewSink: func() connector.Sink { return &sink{scheme: scheme} }}
	}
	return []*connector.Definition{
		def("jdbc-postgres", "JDBC sink for PostgreSQL", "org.apache.pulsar.io.jdbc.PostgresJdbcAutoSchemaSink", "postgres"),
		def("jdbc-mariadb", "JDBC sink for MariaDB and MySQL", "org.apache.pulsar.io.jdbc.MariadbJdbcAutoSchemaSink", "mariadb"),
	}
}

type sink struct {
	scheme string // the connector's database
	sc     connector.Context

	d                          dialect
	dsn                        string
	table                      string
	keyCfg, nonKeyCfg          []string
	mode                       string
	nullDelete, useTx, exclude bool
	batchSize                  int
	interval                   time.Duration
	db                         *sql.DB
	cols                       map[string]*column
	order                      []*column
	keyCols                    []string
	batcher                    *connector.Batcher
	typesMu                    sync.Mutex
	typesCache                 map[string]map[string]string
	metaLoaded                 bool
	quotedTable                string
}

func (s *sink) Validate(c connector.Config) error {
	raw := c.Required("jdbcUrl")
	s.table = c.Required("tableName")
	s.keyCfg, s.nonKeyCfg = c.List("key"), c.List("nonKey")
	s.mode = strings.ToUpper(c.OneOf("insertMode", "INSERT", "INSERT", "UPSERT", "UPDATE"))
	s.nullDelete = c.OneOf("nullValueAction", "FAIL", "FAIL", "DELETE") == "DELETE"
	s.batchSize = int(c.IntRange("batchSize", 200, 1, 100000))
	s.interval = c.Millis("timeoutMs", 500*time.Millisecond)
	s.useTx = c.Bool("useTransactions", true)
	s.exclude = c.Bool("excludeNonDeclaredFields", false)
	user, pass := c.String("userName", ""), c.String("password", "")
	if raw == "" {
		return nil
	}
	d, host, port, db, params, err := parseURL(raw)
	if err != nil {
		return fmt.Errorf("configs: %w", err)
	}
	if _, isPG := d.(postgresDialect); isPG != (s.scheme == "postgres") {
		return fmt.Errorf("configs: jdbcUrl %q is not a %s URL (use the jdbc-%s sink)", raw, s.scheme, map[bool]string{true: "postgres", false: "mariadb"}[isPG])
	}
	s.d = d
	if u := params["user"]; u != "" && user == "" {
		user = u
	}
	if p := params["password"]; p != "" && pass == "" {
		pass = p
	}
	if _, ok := d.(postgresDialect); ok {
		u := url.URL{Scheme: "postgres", User: url.UserPassword(user, pass), Host: net.JoinHostPort(host, port), Path: "/" + db}
		q := url.Values{"sslmode": {"prefer"}, "application_name": {"magnetar-jdbc-sink"}}
		if m := params["sslmode"]; m != "" {
			q.Set("sslmode", m)
		}
		u.RawQuery = q.Encode()
		s.dsn = u.String()
	} else {
		mc := mysql.NewConfig()
		mc.User, mc.Passwd, mc.Net, mc.Addr, mc.DBName = user, pass, "tcp", net.JoinHostPort(host, port), db
		mc.Params = map[string]string{"sql_mode": "'STRICT_ALL_TABLES,NO_ENGINE_SUBSTITUTION'", "time_zone": "'+00:00'"}
		s.dsn = mc.FormatDSN()
	}
	return nil
}

func (s *sink) Open(ctx context.Context, sc connector.Context) error {
	s.sc = sc
	s.typesCache = map[string]map[string]string{}
	db, err := sql.Open(s.d.driver(), s.dsn)
	if err != nil {
		return err
	}
	db.SetMaxOpenConns(2)
	db.SetConnMaxIdleTime(time.Minute)
	s.db = db
	s.quotedTable = quoteTable(s.d, s.table)
	s.batcher = &connector.Batcher{Size: s.batchSize, Interval: s.interval, Write: s.writeBatch, Logger: sc.Logger(),
		OnRetry: func(err error) {
			sc.Logger().Warn("jdbc sink: write failed; retrying with backoff", "table", s.table, "err", err)
		}}
	s.batcher.Start(ctx)
	return nil
}

func quoteTable(d dialect, t string) string {
	parts := strings.Split(t, ".")
	for i, p := range parts {
		parts[i] = d.quote(p)
	}
	return strings.Join(parts, ".")
}

func (s *sink) Write(_ context.Context, rec *connector.Record) error {
	s.batcher.Add(rec)
	return nil
}

func (s *sink) Close() error {
	if s.batcher != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		s.batcher.Close(ctx)
		cancel()
	}
	if s.db != nil {
		return s.db.Close()
	}
	return nil
}

// loadMeta reads the table's columns (again after a schema error).
func (s *sink) loadMeta(ctx context.Context) error {
	cols, err := s.d.columns(ctx, s.db, s.table)
	if err != nil {
		return fmt.Errorf("jdbc: reading the columns of %s: %w", s.table, err)
	}
	if len(cols) == 0 {
		return fmt.Errorf("jdbc: table %s has no columns or does not exist", s.table)
	}
	s.cols, s.order, s.keyCols = map[string]*column{}, cols, nil
	for _, c := range cols {
		s.cols[c.name] = c
		if c.key && len(s.keyCfg) == 0 {
			s.keyCols = append(s.keyCols, c.name)
		}
	}
	if len(s.keyCfg) > 0 {
		s.keyCols = s.keyCfg
	}
	for _, k := range s.keyCols {
		if s.cols[k] == nil {
			return connector.Permanentf("jdbc: key column %s is not a column of %s", k, s.table)
		}
	}
	s.metaLoaded = true
	return nil
}

// writeBatch writes recs in one transaction.
func (s *sink) writeBatch(ctx context.Context, recs []*connector.Record) error {
	if !s.metaLoaded {
		if err := s.loadMeta(ctx); err != nil {
			return err
		}
	}
	changes := make([]*change, 0, len(recs))
	for _, r := range recs {
		ch, err := s.decodeRecord(r)
		if err != nil {
			return err // Permanent: the batcher finds the record
		}
		if ch != nil {
			changes = append(changes, ch)
		}
	}
	if len(changes) == 0 {
		return nil
	}
	err := s.apply(ctx, changes)
	if err == nil {
		return nil
	}
	if connector.IsPermanent(err) || s.d.permanent(err) {
		// Maybe the table changed (an ALTER TABLE the records follow): read its columns
		// again and try once more before a record is declared bad.
		if lerr := s.loadMeta(ctx); lerr != nil {
			s.metaLoaded = false
			return lerr
		}
		if err = s.apply(ctx, changes); err == nil {
			return nil
		}
		if connector.IsPermanent(err) || s.d.permanent(err) {
			return connector.Permanent(err)
		}
	}
	return err
}

type execer interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
}

func (s *sink) apply(ctx context.Context, changes []*change) (err error) {
	var ex execer = s.db
	var tx *sql.Tx
	if s.useTx {
		if tx, err = s.db.BeginTx(ctx, nil); err != nil {
			return err
		}
		defer func() {
			if err != nil {
				_ = tx.Rollback()
			}
		}()
		ex = tx
	}
	if s.mode == "INSERT" && !anyEnvelope(changes) {
		err = s.inserts(ctx, ex, changes)
	} else {
		err = s.upserts(ctx, ex, changes)
	}
	if err != nil {
		return err
	}
	if tx != nil {
		return tx.Commit()
	}
	return nil
}

func anyEnvelope(changes []*change) bool {
	for _, c := range changes {
		if c.delete {
			return true
		}
	}
	return false
}

// keyString identifies a row by its key values.
func (s *sink) keyString(row map[string]any) (string, error) {
	var b strings.Builder
	for _, k := range s.keyCols {
		v, ok := row[k]
		if !ok || v == nil {
			return "", connector.Permanentf("jdbc: the record has no value for key column %s", k)
		}
		fmt.Fprintf(&b, "%v\x00", v)
	}
	return b.String(), nil
}

// upserts applies each key's last change: deletes, then one multi-row upsert per column set.
func (s *sink) upserts(ctx context.Context, ex execer, changes []*change) error {
	if len(s.keyCols) == 0 {
		return connector.Permanentf("jdbc: table %s has no primary key; set key for %s", s.table, s.mode)
	}
	last := map[string]*change{}
	var order []string
	for _, ch := range changes {
		k, err := s.keyString(ch.row)
		if err != nil {
			return err
		}
		if _, seen := last[k]; !seen {
			order = append(order, k)
		}
		last[k] = ch
	}
	var dels []*change
	groups := map[string][]*change{}
	var groupOrder []string
	for _, k := range order {
		ch := last[k]
		if ch.delete {
			dels = append(dels, ch)
			continue
		}
		cols, err := s.rowColumns(ch)
		if err != nil {
			return err
		}
		sig := strings.Join(cols, "\x00")
		if _, ok := groups[sig]; !ok {
			groupOrder = append(groupOrder, sig)
		}
		groups[sig] = append(groups[sig], ch)
	}
	if err := s.deletes(ctx, ex, dels); err != nil {
		return err
	}
	for _, sig := range groupOrder {
		if err := s.insertRows(ctx, ex, strings.Split(sig, "\x00"), groups[sig], true); err != nil {
			return err
		}
	}
	return nil
}

func (s *sink) inserts(ctx context.Context, ex execer, changes []*change) error {
	// Consecutive records with the same columns share one multi-row INSERT.
	for i := 0; i < len(changes); {
		cols, err := s.rowColumns(changes[i])
		if err != nil {
			return err
		}
		j := i + 1
		for ; j < len(changes); j++ {
			c2, err := s.rowColumns(changes[j])
			if err != nil || strings.Join(c2, "\x00") != strings.Join(cols, "\x00") {
				break
			}
		}
		if err := s.insertRows(ctx, ex, cols, changes[i:j], false); err != nil {
			return err
		}
		i = j
	}
	return nil
}

// rowColumns are the columns ch writes, in table order: key and nonKey columns the record
// has, less values the database did not send.
func (s *sink) rowColumns(ch *change) ([]string, error) {
	want := map[string]bool{}
	if len(s.nonKeyCfg) > 0 {
		for _, k := range s.keyCols {
			want[k] = true
		}
		for _, k := range s.nonKeyCfg {
			want[k] = true
		}
	}
	var out []string
	for name, v := range ch.row {
		if len(want) > 0 && !want[name] {
			continue
		}
		if s.cols[name] == nil {
			if s.exclude {
				continue
			}
			return nil, connector.Permanentf("jdbc: field %s is not a column of %s (excludeNonDeclaredFields drops such fields)", name, s.table)
		}
		if v == unavailable {
			continue
		}
		out = append(out, name)
	}
	sort.Slice(out, func(i, j int) bool { return s.position(out[i]) < s.position(out[j]) })
	if len(out) == 0 {
		return nil, connector.Permanentf("jdbc: the record has no column of %s", s.table)
	}
	return out, nil
}

const unavailable = "__debezium_unavailable_value"

func (s *sink) position(name string) int {
	for i, c := range s.order {
		if c.name == name {
			return i
		}
	}
	return len(s.order)
}

// insertRows writes rows with the same columns in multi-row statements (upsert: on
// conflict of the key, update the non-key columns).
func (s *sink) insertRows(ctx context.Context, ex execer, cols []string, rows []*change, upsert bool) error {
	isPG := s.scheme == "postgres"
	perStmt := max(1, min(len(rows), s.d.maxParams()/len(cols)))
	var updates []string
	if upsert {
		keys := map[string]bool{}
		for _, k := range s.keyCols {
			keys[k] = true
		}
		for _, c := range cols {
			if !keys[c] {
				updates = append(updates, c)
			}
		}
	}
	if s.mode == "UPDATE" && upsert {
		return s.updates(ctx, ex, cols, updates, rows)
	}
	for start := 0; start < len(rows); start += perStmt {
		chunk := rows[start:min(len(rows), start+perStmt)]
		var b strings.Builder
		b.WriteString("INSERT INTO " + s.quotedTable + " (")
		for i, c := range cols {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(s.d.quote(c))
		}
		b.WriteString(") VALUES ")
		args := make([]any, 0, len(chunk)*len(cols))
		var err error
		if args, err = s.appendTuples(&b, args, chunk, cols, isPG); err != nil {
			return err
		}
		if upsert {
			b.WriteString(s.d.upsertTail(s.keyCols, updates))
		}
		if _, err := ex.ExecContext(ctx, b.String(), args...); err != nil {
			return err
		}
	}
	return nil
}

// updates is insertMode UPDATE: UPDATE ... SET non-key columns WHERE key.
// appendTuples writes "(p1,p2,...),(...)" for the cols of every row in chunk, with their
// values appended to args in placeholder order. A value the column cannot take is a
// permanent error.
func (s *sink) appendTuples(b *strings.Builder, args []any, chunk []*change, cols []string, isPG bool) ([]any, error) {
	n := len(args) + 1
	for ri, ch := range chunk {
		if ri > 0 {
			b.WriteByte(',')
		}
		b.WriteByte('(')
		for ci, c := range cols {
			if ci > 0 {
				b.WriteByte(',')
			}
			col := s.cols[c]
			v, err := param(ch.row[c], col, ch.types[c], isPG)
			if err != nil {
				return args, connector.Permanent(err)
			}
			args = append(args, v)
			b.WriteString(s.d.placeholder(n, col))
			n++
		}
		b.WriteByte(')')
	}
	return args, nil
}

func (s *sink) updates(ctx context.Context, ex execer, _ []string, updates []string, rows []*change) error {
	isPG := s.scheme == "postgres"
	for _, ch := range rows {
		var b strings.Builder
		var args []any
		n := 1
		b.WriteString("UPDATE " + s.quotedTable + " SET ")
		for i, u := range updates {
			if i > 0 {
				b.WriteByte(',')
			}
			col := s.cols[u]
			v, err := param(ch.row[u], col, ch.types[u], isPG)
			if err != nil {
				return connector.Permanent(err)
			}
			args = append(args, v)
			b.WriteString(s.d.quote(u) + " = " + s.d.placeholder(n, col))
			n++
		}
		b.WriteString(" WHERE ")
		for i, k := range s.keyCols {
			if i > 0 {
				b.WriteString(" AND ")
			}
			col := s.cols[k]
			v, err := param(ch.row[k], col, ch.types[k], isPG)
			if err != nil {
				return connector.Permanent(err)
			}
			args = append(args, v)
			b.WriteString(s.d.quote(k) + " = " + s.d.placeholder(n, col))
			n++
		}
		if len(updates) == 0 {
			continue
		}
		if _, err := ex.ExecContext(ctx, b.String(), args...); err != nil {
			return err
		}
	}
	return nil
}

// deletes removes rows by key: DELETE ... WHERE (k1, k2) IN ((...), ...).
func (s *sink) deletes(ctx context.Context, ex execer, dels []*change) error {
	if len(dels) == 0 {
		return nil
	}
	isPG := s.scheme == "postgres"
	perStmt := max(1, s.d.maxParams()/len(s.keyCols))
	for start := 0; start < len(dels); start += perStmt {
		chunk := dels[start:min(len(dels), start+perStmt)]
		var b strings.Builder
		b.WriteString("DELETE FROM " + s.quotedTable + " WHERE (")
		for i, k := range s.keyCols {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(s.d.quote(k))
		}
		b.WriteString(") IN (")
		var args []any
		var err error
		if args, err = s.appendTuples(&b, args, chunk, s.keyCols, isPG); err != nil {
			return err
		}
		b.WriteByte(')')
		if _, err := ex.ExecContext(ctx, b.String(), args...); err != nil {
			return err
		}
	}
	return nil
}
