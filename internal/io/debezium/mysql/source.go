// Package mysql is the debezium-mysql source (MySQL and MariaDB; Pulsar's debezium-mariadb
// name too): change data capture from the binary log in row format
// (github.com/go-mysql-org/go-mysql), in Debezium's envelope on per-table topics
// {topic.prefix}.{database}.{table}.
//
// Configs (Debezium's names): database.hostname, database.port (3306), database.user,
// database.password, database.server.id (default: derived from the source's name),
// topic.prefix (or database.server.name), database.include.list / database.exclude.list /
// table.include.list / table.exclude.list, snapshot.mode (initial, never, no_data,
// initial_only, when_needed), tombstones.on.delete (true), decimal.handling.mode (string,
// double), offset.flush.interval.ms (1000), topic.namespace, and the schema history's
// (below).
//
// The server must log rows: binlog_format=ROW and binlog_row_image=FULL;
// binlog_row_metadata=FULL (MySQL 8, MariaDB 10.5+) lets the source check each event's
// columns against the table it knows.
//
// Snapshot: one transaction WITH CONSISTENT SNAPSHOT, its binlog position read without
// locks on MariaDB (binlog_snapshot_file/position) or under a brief FLUSH TABLES WITH READ
// LOCK on MySQL; every row is a read event (op "r"), and streaming starts at that position.
// Checkpoint: the binlog file and position after the last transaction whose changes the
// broker acknowledged, saved every offset.flush.interval.ms, so a restart resumes there.
// DDL and the schema history: each DDL statement (a QUERY event) that changes a captured
// table is parsed and applied to the table's columns as they stood at that binlog position,
// and the result recorded, with the position, in a history topic
// (schema.history.internal.pulsar.topic, or Debezium 1.x's database.history.pulsar.topic;
// default {tenant}/{namespace}/{name}-debezium-history-topic), as are the captured tables'
// columns when the source first starts. The source keeps every table's column lists by
// position and, on a restart, rebuilds them from the topic, so each rows event is decoded
// with the columns it was written with, even one logged before a later ALTER TABLE that is
// still to be read. schema.history.internal (database.history) names the class: Pulsar's
// PulsarSchemaHistory / PulsarDatabaseHistory (the default; the topic) or Debezium's
// MemorySchemaHistory (nothing survives a restart); schema.history.internal.pulsar.service.url
// (database.history.pulsar.service.url) puts the topic on another cluster. DDL the parser
// cannot read makes the source fall back to information_schema for the tables' next events.
// A table's topic gets a new schema version when its columns change.
package mysql

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"time"

	gomysql "github.com/go-mysql-org/go-mysql/mysql"
	"github.com/go-mysql-org/go-mysql/replication"
	drv "github.com/go-sql-driver/mysql"

	"github.com/magnetar-io/magnetar/internal/io/connector"
	"github.com/magnetar-io/magnetar/internal/io/debezium"
)

// Definitions are debezium-mysql and debezium-mariadb (the same source).
func Definitions() []*connector.Definition {
	def := func(name, class string) *connector.Definition {
		return &connector.Definition{
			Name: name, Description: "Debezium MySQL/MariaDB change data capture (binary log, row format)",
			SourceClass: class, NewSource: func() connector.Source { return &source{} },
			SourceRoutes: true, SingleInstance: true,
			SourceFields: []connector.Field{
				{Name: "database.hostname", TypeName: "String", Attributes: map[string]string{"required": "true"}},
				{Name: "database.port", TypeName: "int", Attributes: map[string]string{"defaultValue": "3306"}},
				{Name: "database.user", TypeName: "String", Attributes: map[string]string{"required": "true"}},
				{Name: "database.password", TypeName: "String", Attributes: map[string]string{"sensitive": "true"}},
				{Name: "database.server.id", TypeName: "long"},
				{Name: "topic.prefix", TypeName: "String", Attributes: map[string]string{"required": "true"}},
				{Name: "database.include.list", TypeName: "String"},
				{Name: "table.include.list", TypeName: "String"},
				{Name: "snapshot.mode", TypeName: "String", Attributes: map[string]string{"defaultValue": "initial"}},
				{Name: "schema.history.internal", TypeName: "String", Attributes: map[string]string{"defaultValue": historyPulsar}},
				{Name: "schema.history.internal.pulsar.topic", TypeName: "String", Attributes: map[string]string{"defaultValue": "{tenant}/{namespace}/{name}" + historyTopicSuffix}},
				{Name: "schema.history.internal.pulsar.service.url", TypeName: "String"},
			},
		}
	}
	return []*connector.Definition{
		def("debezium-mysql", "org.apache.pulsar.io.debezium.mysql.DebeziumMysqlSource"),
		def("debezium-mariadb", "org.apache.pulsar.io.debezium.mariadb.DebeziumMariaDbSource"),
	}
}

type config struct {
	host, user, password string
	port                 int
	serverID             uint32
	common               debezium.Common
	filter               *debezium.Filter
	// The schema history: durable in historyTopic (through historyURL's cluster when set),
	// or in memory only.
	historyMemory bool
	historyTopic  string
	historyURL    string
}

func parse(c connector.Config, fqfn string) (*config, error) {
	ns := fqfn
	if i := strings.LastIndexByte(ns, '/'); i > 0 {
		ns = ns[:i]
	}
	h := fnv.New32a()
	_, _ = h.Write([]byte(fqfn))
	cfg := &config{
		host: c.Required("database.hostname"), port: int(c.IntRange("database.port", 3306, 1, 65535)),
		user: c.Required("database.user"), password: c.String("database.password", ""),
		serverID: uint32(c.IntRange("database.server.id", int64(5400+h.Sum32()%100000), 1, 1<<32-1)),
		common:   debezium.ParseCommon(c, ns),
	}
	// Debezium 2.x names first, then the 1.x names Pulsar's older docs use.
	key := func(v2, v1 string) string {
		if !c.Has(v2) && c.Has(v1) {
			return v1
		}
		return v2
	}
	switch c.OneOf(key("schema.history.internal", "database.history"), historyPulsar, historyPulsar, historyPulsarV1, historyMemory, historyMemoryV1) {
	case historyMemory, historyMemoryV1:
		cfg.historyMemory = true
	}
	cfg.historyTopic = c.String(key("schema.history.internal.pulsar.topic", "database.history.pulsar.topic"), fqfn+historyTopicSuffix)
	cfg.historyURL = c.String(key("schema.history.internal.pulsar.service.url", "database.history.pulsar.service.url"), "")
	var err error
	if cfg.filter, err = debezium.NewFilter(c, "database"); err != nil {
		return nil, err
	}
	return cfg, c.Err()
}

type checkpoint struct {
	File              string `json:"file,omitempty"`
	Pos               uint32 `json:"pos,omitempty"`
	SnapshotCompleted bool   `json:"snapshot_completed"`
}

type position struct {
	file string
	pos  uint32
}

// table is a captured table with its columns, as one version of the schema history has them.
type table struct {
	t     *debezium.Table
	cols  []*colInfo
	names []string // column names as information_schema lists them
}

// staleDDL is a DDL statement the parser did not read, logged at pos.
type staleDDL struct {
	pos     position
	db, ddl string
}

type source struct {
	cfg       *config
	sc        connector.SourceContext
	db        *sql.DB
	cp        checkpoint
	tracker   connector.Tracker[position]
	hist      *versions
	store     *historyStore // nil: schema.history.internal is in memory
	stale     *staleDDL     // the last DDL statement not parsed: tables older than it are read again
	mariadb   bool
	file      string
	savedAt   time.Time
	keyBuf    []byte
	gtid      string
	eventTime time.Time
}

func (s *source) Validate(c connector.Config) error {
	_, err := parse(c, "public/default/x")
	return err
}

func (s *source) dsn() string {
	mc := drv.NewConfig()
	mc.User, mc.Passwd, mc.Net, mc.Addr = s.cfg.user, s.cfg.password, "tcp", net.JoinHostPort(s.cfg.host, strconv.Itoa(s.cfg.port))
	mc.Params = map[string]string{"time_zone": "'+00:00'"}
	return mc.FormatDSN()
}

func (s *source) Run(ctx context.Context, sc connector.SourceContext) error {
	s.sc = sc
	cfg, err := parse(sc.Config(), sc.Name())
	if err != nil {
		return err
	}
	s.cfg, s.hist = cfg, newVersions()
	if b, err := sc.Offsets().Load(ctx); err != nil {
		return err
	} else if len(b) > 0 {
		if err := json.Unmarshal(b, &s.cp); err != nil {
			return fmt.Errorf("debezium-mysql: checkpoint is corrupt: %w", err)
		}
	}
	if s.db, err = sql.Open("mysql", s.dsn()); err != nil {
		return err
	}
	s.db.SetMaxOpenConns(3)
	var version string
	if err := s.db.QueryRowContext(ctx, "SELECT VERSION()").Scan(&version); err != nil {
		return fmt.Errorf("debezium-mysql: connecting: %w", err)
	}
	s.mariadb = strings.Contains(strings.ToLower(version), "mariadb")
	if err := s.checkBinlog(ctx); err != nil {
		return err
	}
	if !cfg.historyMemory {
		if s.store, err = openHistory(ctx, sc, cfg, s.replay); err != nil {
			return err
		}
	}
	if !s.cp.SnapshotCompleted {
		if cfg.common.SnapshotFirst() {
			if err := s.snapshot(ctx); err != nil {
				return err
			}
			if cfg.common.SnapshotMode == "initial_only" {
				<-ctx.Done()
				return nil
			}
		} else {
			file, pos, err := s.currentPosition(ctx, s.db)
			if err != nil {
				return err
			}
			if err := s.recordSchemas(ctx, position{file, pos}); err != nil {
				return err
			}
			s.cp = checkpoint{File: file, Pos: pos, SnapshotCompleted: true}
			if err := s.save(); err != nil {
				return err
			}
		}
	} else if len(s.hist.byTable) == 0 {
		// A checkpoint from before the schema history: the tables' columns now are the best
		// account of them at the checkpoint.
		if err := s.recordSchemas(ctx, position{s.cp.File, s.cp.Pos}); err != nil {
			return err
		}
	}
	return s.stream(ctx)
}

// replay loads one schema history record.
func (s *source) replay(b []byte) error {
	entries, err := decodeHistory(b)
	if err != nil {
		return err
	}
	for _, e := range entries {
		s.hist.add(e.pos, e.id, e.cols)
	}
	return nil
}

// record puts changes logged at p in the history (the topic first, so the checkpoint never
// passes a change the topic does not hold) and in the source's versions.
func (s *source) record(ctx context.Context, p position, snapshot bool, db, ddl string, changes []ddlChange) error {
	if len(changes) == 0 {
		return nil
	}
	if s.store != nil {
		b := encodeHistory(s.cfg.common.Prefix, p, snapshot, time.Now().UnixMilli(), db, ddl, changes)
		if err := s.store.append(ctx, b); err != nil {
			return err
		}
	}
	for _, c := range changes {
		s.hist.add(p, c.id, c.cols)
	}
	return nil
}

// recordSchemas records the captured tables' columns as they are now, at p.
func (s *source) recordSchemas(ctx context.Context, p position) error {
	conn, err := s.db.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	names, err := s.capturedTables(ctx, conn)
	if err != nil {
		return err
	}
	for _, n := range names {
		id := tableID{n[0], n[1]}
		cols, err := s.describe(ctx, id)
		if err != nil {
			return err
		}
		if err := s.record(ctx, p, true, id.db, "", []ddlChange{{id: id, kind: changeCreate, cols: cols}}); err != nil {
			return err
		}
	}
	return nil
}

// checkBinlog fails clearly when the server does not log rows.
func (s *source) checkBinlog(ctx context.Context) error {
	vars := map[string]string{}
	rows, err := s.db.QueryContext(ctx, "SHOW GLOBAL VARIABLES WHERE Variable_name IN ('log_bin', 'binlog_format', 'binlog_row_image')")
	if err != nil {
		return fmt.Errorf("debezium-mysql: reading server variables: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var k, v string
		if err := rows.Scan(&k, &v); err != nil {
			return err
		}
		vars[strings.ToLower(k)] = strings.ToUpper(v)
	}
	switch {
	case vars["log_bin"] != "ON":
		return errors.New("debezium-mysql: the binary log is off (start the server with --log-bin)")
	case vars["binlog_format"] != "ROW":
		return fmt.Errorf("debezium-mysql: binlog_format is %s; change data capture needs ROW", vars["binlog_format"])
	case vars["binlog_row_image"] != "" && vars["binlog_row_image"] != "FULL":
		return fmt.Errorf("debezium-mysql: binlog_row_image is %s; change data capture needs FULL", vars["binlog_row_image"])
	}
	return rows.Err()
}

func (s *source) currentPosition(ctx context.Context, q interface {
	QueryContext(context.Context, string, ...any) (*sql.Rows, error)
}) (string, uint32, error) {
	rows, err := q.QueryContext(ctx, "SHOW MASTER STATUS")
	if err != nil {
		return "", 0, fmt.Errorf("debezium-mysql: SHOW MASTER STATUS: %w", err)
	}
	defer rows.Close()
	cols, _ := rows.Columns()
	if !rows.Next() {
		return "", 0, errors.New("debezium-mysql: SHOW MASTER STATUS returned nothing (is the binary log on?)")
	}
	vals := make([]sql.RawBytes, len(cols))
	ptrs := make([]any, len(cols))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	if err := rows.Scan(ptrs...); err != nil {
		return "", 0, err
	}
	pos, err := strconv.ParseUint(string(vals[1]), 10, 32)
	return string(vals[0]), uint32(pos), err
}

func (s *source) save() error {
	b, _ := json.Marshal(s.cp)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := s.sc.Offsets().Save(ctx, b); err != nil {
		return err
	}
	s.savedAt = time.Now()
	return nil
}

// saveCommitted saves the position of the last fully published transaction.
func (s *source) saveCommitted() error {
	p, ok := s.tracker.Committable()
	if !ok || (p.file == s.cp.File && p.pos == s.cp.Pos) {
		s.savedAt = time.Now()
		return nil
	}
	s.cp.File, s.cp.Pos = p.file, p.pos
	return s.save()
}

func (s *source) Close() error {
	s.store.close()
	if s.db == nil {
		return nil
	}
	defer s.db.Close()
	if s.cp.SnapshotCompleted {
		return s.saveCommitted()
	}
	return nil
}

// describe reads a table's columns from information_schema.
func (s *source) describe(ctx context.Context, id tableID) ([]*colInfo, error) {
	db, name := id.db, id.name
	rows, err := s.db.QueryContext(ctx, `SELECT COLUMN_NAME, LOWER(DATA_TYPE), LOWER(COLUMN_TYPE), COALESCE(DATETIME_PRECISION, 0), COLUMN_KEY
		FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ? ORDER BY ORDINAL_POSITION`, db, name)
	if err != nil {
		return nil, fmt.Errorf("debezium-mysql: columns of %s.%s: %w", db, name, err)
	}
	defer rows.Close()
	var cols []*colInfo
	for rows.Next() {
		c := &colInfo{}
		var ct, key string
		if err := rows.Scan(&c.name, &c.dataType, &ct, &c.precision, &key); err != nil {
			return nil, err
		}
		c.key = key == "PRI"
		c.parseColumnType(ct)
		cols = append(cols, c)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	if len(cols) == 0 {
		return nil, fmt.Errorf("debezium-mysql: table %s.%s has no columns (dropped?)", db, name)
	}
	return cols, nil
}

// build is the decoder and envelope of a table with columns cols.
func (s *source) build(id tableID, cols []*colInfo) *table {
	t := &table{}
	dcols := make([]debezium.Column, 0, len(cols))
	for _, c := range cols {
		c := *c // versions share columns; the decimal mode is this source's
		c.classify(s.cfg.common.DecimalMode)
		t.cols = append(t.cols, &c)
		t.names = append(t.names, c.name)
		dcols = append(dcols, debezium.Column{Name: c.name, Type: c.connect, Logical: c.logical, Optional: true, Key: c.key})
	}
	t.t = debezium.NewTable(debezium.TopicName(s.cfg.common.Namespace, s.cfg.common.Prefix, id.db, id.name), id.db, id.name, dcols)
	return t
}

// tableAt is id's table as of the rows event at p. A table the history does not know (or
// one an unparsed DDL statement may have changed) is read from information_schema and
// recorded.
func (s *source) tableAt(ctx context.Context, id tableID, p position) (*table, error) {
	v := s.hist.at(id, p, false)
	if v == nil || v.cols == nil || (s.stale != nil && v.pos.before(s.stale.pos)) {
		cols, err := s.describe(ctx, id)
		if err != nil {
			return nil, err
		}
		at, db, ddl, kind := p, id.db, "", changeCreate
		if s.stale != nil {
			at, db, ddl = s.stale.pos, s.stale.db, s.stale.ddl
		}
		if v != nil && v.cols != nil {
			kind = changeAlter
		}
		if err := s.record(ctx, at, false, db, ddl, []ddlChange{{id: id, kind: kind, cols: cols}}); err != nil {
			return nil, err
		}
		if v = s.hist.at(id, p, false); v == nil || v.cols == nil {
			return nil, fmt.Errorf("debezium-mysql: no columns for %s at %s:%d", id, p.file, p.pos)
		}
	}
	if v.tbl == nil {
		v.tbl = s.build(id, v.cols)
	}
	return v.tbl, nil
}

func (s *source) row(t *table, text [][]byte, nulls []bool) []any {
	row := make([]any, len(t.cols))
	for i, c := range t.cols {
		if i >= len(text) || nulls[i] {
			continue
		}
		v, err := c.convert(text[i])
		if err != nil {
			s.sc.SourceException(fmt.Errorf("%s.%s column %s: %w", t.t.Schema, t.t.Name, c.name, err))
			v = string(text[i])
		}
		row[i] = v
	}
	return row
}

// emit publishes one change (and, after a delete, its tombstone).
func (s *source) emit(ctx context.Context, t *table, op string, before, after []any, snapshot string, p position, rowIdx int) error {
	keyRow := after
	if op == "d" {
		keyRow = before
	}
	s.keyBuf = t.t.AppendKey(s.keyBuf[:0], keyRow)
	key := string(s.keyBuf)
	var gtid any
	if s.gtid != "" {
		gtid = s.gtid
	}
	ts := s.eventTime
	if ts.IsZero() {
		ts = time.Now()
	}
	ev := &debezium.Event{Op: op, Before: before, After: after, TsMs: debezium.NowMs(), Source: []debezium.Field{
		{Name: "version", Value: debezium.Version}, {Name: "connector", Value: "mysql"}, {Name: "name", Value: s.cfg.common.Prefix},
		{Name: "ts_ms", Value: ts.UnixMilli()}, {Name: "snapshot", Value: snapshot}, {Name: "db", Value: t.t.Schema},
		{Name: "sequence", Value: nil}, {Name: "table", Value: t.t.Name}, {Name: "server_id", Value: int64(s.cfg.serverID)},
		{Name: "gtid", Value: gtid}, {Name: "file", Value: p.file}, {Name: "pos", Value: int64(p.pos)}, {Name: "row", Value: rowIdx},
		{Name: "thread", Value: nil}, {Name: "query", Value: nil},
	}}
	rec := &connector.Record{Topic: t.t.Topic, Key: key, Value: t.t.AppendEnvelope(nil, ev), Properties: t.t.Props,
		Schema: t.t.PulsarSchema, EventTime: ts}
	rec.OnAck = s.tracker.Add(position{}, false)
	if err := s.sc.Emit(ctx, rec); err != nil {
		return err
	}
	if op == "d" && s.cfg.common.Tombstones && key != "" {
		tomb := &connector.Record{Topic: t.t.Topic, Key: key, Properties: t.t.Props, Schema: t.t.PulsarSchema, EventTime: ts}
		tomb.OnAck = s.tracker.Add(position{}, false)
		return s.sc.Emit(ctx, tomb)
	}
	return nil
}

// snapshot reads every captured table in one consistent snapshot and records where the
// binary log stood at that moment.
func (s *source) snapshot(ctx context.Context) error {
	conn, err := s.db.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	var file string
	var pos uint32
	if s.mariadb {
		if _, err := conn.ExecContext(ctx, "START TRANSACTION WITH CONSISTENT SNAPSHOT, READ ONLY"); err != nil {
			return fmt.Errorf("debezium-mysql: snapshot transaction: %w", err)
		}
		st := map[string]string{}
		rows, err := conn.QueryContext(ctx, "SHOW STATUS LIKE 'binlog_snapshot_%'")
		if err != nil {
			return err
		}
		for rows.Next() {
			var k, v string
			if err := rows.Scan(&k, &v); err != nil {
				rows.Close()
				return err
			}
			st[strings.ToLower(k)] = v
		}
		rows.Close()
		file = st["binlog_snapshot_file"]
		p, err := strconv.ParseUint(st["binlog_snapshot_position"], 10, 32)
		if err != nil || file == "" {
			return fmt.Errorf("debezium-mysql: binlog_snapshot_file/position not available: %v", st)
		}
		pos = uint32(p)
	} else {
		// MySQL: a brief global read lock makes the snapshot and the position agree.
		if _, err := conn.ExecContext(ctx, "FLUSH TABLES WITH READ LOCK"); err != nil {
			return fmt.Errorf("debezium-mysql: FLUSH TABLES WITH READ LOCK (needs RELOAD): %w", err)
		}
		if _, err := conn.ExecContext(ctx, "START TRANSACTION WITH CONSISTENT SNAPSHOT, READ ONLY"); err != nil {
			_, _ = conn.ExecContext(context.Background(), "UNLOCK TABLES")
			return err
		}
		file, pos, err = s.currentPosition(ctx, conn)
		_, _ = conn.ExecContext(context.Background(), "UNLOCK TABLES")
		if err != nil {
			return err
		}
	}
	defer conn.ExecContext(context.Background(), "ROLLBACK")
	names, err := s.capturedTables(ctx, conn)
	if err != nil {
		return err
	}
	s.sc.Logger().Info("debezium-mysql: snapshot", "tables", len(names), "file", file, "pos", pos)
	var held *heldRow
	for _, n := range names {
		id := tableID{n[0], n[1]}
		described, err := s.describe(ctx, id)
		if err != nil {
			return err
		}
		if err := s.record(ctx, position{file, pos}, true, id.db, "", []ddlChange{{id: id, kind: changeCreate, cols: described}}); err != nil {
			return err
		}
		t := s.build(id, described)
		rows, err := conn.QueryContext(ctx, "SELECT * FROM `"+strings.ReplaceAll(n[0], "`", "``")+"`.`"+strings.ReplaceAll(n[1], "`", "``")+"`")
		if err != nil {
			return fmt.Errorf("debezium-mysql: reading %s.%s: %w", n[0], n[1], err)
		}
		cols, _ := rows.Columns()
		vals := make([]sql.RawBytes, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		for rows.Next() {
			if err := rows.Scan(ptrs...); err != nil {
				rows.Close()
				return err
			}
			nulls := make([]bool, len(vals))
			for i, v := range vals {
				nulls[i] = v == nil
			}
			row := s.row(t, rawToBytes(vals), nulls)
			if held != nil {
				if err := s.emit(ctx, held.t, "r", nil, held.row, "true", position{file, pos}, 0); err != nil {
					rows.Close()
					return err
				}
			}
			held = &heldRow{t: t, row: row}
		}
		if err := rows.Err(); err != nil {
			rows.Close()
			return err
		}
		rows.Close()
	}
	if held != nil {
		if err := s.emit(ctx, held.t, "r", nil, held.row, "last", position{file, pos}, 0); err != nil {
			return err
		}
	}
	for s.tracker.Pending() > 0 {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(5 * time.Millisecond):
		}
	}
	s.cp = checkpoint{File: file, Pos: pos, SnapshotCompleted: true}
	return s.save()
}

type heldRow struct {
	t   *table
	row []any
}

func rawToBytes(vals []sql.RawBytes) [][]byte {
	out := make([][]byte, len(vals))
	for i, v := range vals {
		out[i] = append([]byte(nil), v...)
	}
	return out
}

var systemSchemas = map[string]bool{"mysql": true, "information_schema": true, "performance_schema": true, "sys": true}

func (s *source) capturedTables(ctx context.Context, conn *sql.Conn) ([][2]string, error) {
	rows, err := conn.QueryContext(ctx, "SELECT TABLE_SCHEMA, TABLE_NAME FROM information_schema.TABLES WHERE TABLE_TYPE = 'BASE TABLE' ORDER BY 1, 2")
	if err != nil {
		return nil, fmt.Errorf("debezium-mysql: listing tables: %w", err)
	}
	defer rows.Close()
	var out [][2]string
	for rows.Next() {
		var db, t string
		if err := rows.Scan(&db, &t); err != nil {
			return nil, err
		}
		if !systemSchemas[strings.ToLower(db)] && s.cfg.filter.Includes(db, t) {
			out = append(out, [2]string{db, t})
		}
	}
	return out, rows.Err()
}

// stream follows the binary log from the checkpoint.
func (s *source) stream(ctx context.Context) error {
	flavor := gomysql.MySQLFlavor
	if s.mariadb {
		flavor = gomysql.MariaDBFlavor
	}
	syncer := replication.NewBinlogSyncer(replication.BinlogSyncerConfig{
		ServerID: s.cfg.serverID, Flavor: flavor, Host: s.cfg.host, Port: uint16(s.cfg.port),
		User: s.cfg.user, Password: s.cfg.password, TimestampStringLocation: time.UTC,
		HeartbeatPeriod: 10 * time.Second, ReadTimeout: 30 * time.Second,
		DisableRetrySync: true, Logger: slog.New(slog.DiscardHandler),
	})
	defer syncer.Close()
	st, err := syncer.StartSync(gomysql.Position{Name: s.cp.File, Pos: s.cp.Pos})
	if err != nil {
		return fmt.Errorf("debezium-mysql: starting binlog sync at %s:%d: %w", s.cp.File, s.cp.Pos, err)
	}
	s.file = s.cp.File
	s.sc.Logger().Info("debezium-mysql: streaming", "file", s.cp.File, "pos", s.cp.Pos, "serverId", s.cfg.serverID)
	for {
		ectx, cancel := context.WithTimeout(ctx, s.cfg.common.FlushInterval)
		ev, err := st.GetEvent(ectx)
		cancel()
		if time.Since(s.savedAt) >= s.cfg.common.FlushInterval {
			if err := s.saveCommitted(); err != nil {
				return err
			}
		}
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			if errors.Is(err, context.DeadlineExceeded) {
				continue
			}
			return fmt.Errorf("debezium-mysql: binlog stream: %w", err)
		}
		if err := s.handle(ctx, ev); err != nil {
			return err
		}
	}
}

func (s *source) handle(ctx context.Context, ev *replication.BinlogEvent) error {
	h := ev.Header
	if h.Timestamp > 0 {
		s.eventTime = time.Unix(int64(h.Timestamp), 0)
	}
	switch e := ev.Event.(type) {
	case *replication.RotateEvent:
		s.file = string(e.NextLogName)
	case *replication.XIDEvent:
		s.tracker.Mark(position{s.file, h.LogPos})
	case *replication.GTIDEvent:
		s.gtid = fmt.Sprintf("%x:%d", e.SID, e.GNO)
	case *replication.MariadbGTIDEvent:
		s.gtid = e.GTID.String()
	case *replication.QueryEvent:
		q := strings.ToUpper(strings.TrimSpace(string(e.Query)))
		switch {
		case q == "BEGIN":
		case q == "COMMIT":
			s.tracker.Mark(position{s.file, h.LogPos})
		default:
			// DDL (or another statement logged as a query).
			p := position{s.file, h.LogPos}
			if err := s.ddl(ctx, e, p); err != nil {
				return err
			}
			s.tracker.Mark(p)
		}
	case *replication.RowsEvent:
		return s.rows(ctx, e, position{s.file, h.LogPos})
	}
	return nil
}

func (s *source) rows(ctx context.Context, e *replication.RowsEvent, p position) error {
	db, name := string(e.Table.Schema), string(e.Table.Table)
	if systemSchemas[strings.ToLower(db)] || !s.cfg.filter.Includes(db, name) {
		return nil
	}
	id := tableID{db, name}
	t, err := s.tableAt(ctx, id, p)
	if err != nil {
		return err
	}
	// With binlog_row_metadata=FULL the event names its columns: a check on the history.
	if binNames := e.Table.ColumnNameString(); len(binNames) > 0 && !sameNames(binNames, t.names) {
		// The history missed a change (DDL it could not follow): the server's columns
		// now are right for this event if they have its names.
		cols, err := s.describe(ctx, id)
		if err != nil {
			return err
		}
		if !sameNames(binNames, colNames(cols)) {
			return fmt.Errorf("debezium-mysql: the event at %s:%d has columns %v, but the schema history has %v for %s and the server %v now",
				p.file, p.pos, binNames, t.names, id, colNames(cols))
		}
		if err := s.record(ctx, p, false, db, "", []ddlChange{{id: id, kind: changeAlter, cols: cols}}); err != nil {
			return err
		}
		if t, err = s.tableAt(ctx, id, p); err != nil {
			return err
		}
	}
	conv := func(vals []any) []any {
		text := make([][]byte, len(t.cols))
		nulls := make([]bool, len(t.cols))
		for i, c := range t.cols {
			if i >= len(vals) {
				nulls[i] = true
				continue
			}
			text[i], nulls[i] = c.fromBinlog(vals[i])
		}
		return s.row(t, text, nulls)
	}
	switch e.Type() {
	case replication.EnumRowsEventTypeInsert:
		for i, r := range e.Rows {
			if err := s.emit(ctx, t, "c", nil, conv(r), "false", p, i); err != nil {
				return err
			}
		}
	case replication.EnumRowsEventTypeUpdate:
		for i := 0; i+1 < len(e.Rows); i += 2 {
			before, after := conv(e.Rows[i]), conv(e.Rows[i+1])
			if t.t.HasKey() && string(t.t.AppendKey(nil, before)) != string(t.t.AppendKey(nil, after)) {
				// The key changed: a delete of the old key (and its tombstone), then a create.
				if err := s.emit(ctx, t, "d", before, nil, "false", p, i/2); err != nil {
					return err
				}
				if err := s.emit(ctx, t, "c", nil, after, "false", p, i/2); err != nil {
					return err
				}
				continue
			}
			if err := s.emit(ctx, t, "u", before, after, "false", p, i/2); err != nil {
				return err
			}
		}
	case replication.EnumRowsEventTypeDelete:
		for i, r := range e.Rows {
			if err := s.emit(ctx, t, "d", conv(r), nil, "false", p, i); err != nil {
				return err
			}
		}
	}
	return nil
}

// ddl follows one DDL statement logged at p: the captured tables it changed get new
// versions, recorded in the history. A statement replayed from an older checkpoint finds
// its versions recorded already.
func (s *source) ddl(ctx context.Context, e *replication.QueryEvent, p position) error {
	query := string(e.Query)
	if !isSchemaDDL(query) {
		return nil
	}
	changes, err := parseDDL(query, string(e.Schema), s.hist.view(p), s.mariadb)
	if err != nil {
		// Not a statement the parser reads: every table is read again from the server at
		// its next rows event (right unless the binlog is behind further DDL).
		s.sc.Logger().Warn("debezium-mysql: DDL not understood; reading the tables' columns from the server", "file", p.file, "pos", p.pos, "err", err)
		s.sc.SourceException(err)
		s.stale = &staleDDL{pos: p, db: string(e.Schema), ddl: query}
		return nil
	}
	var keep []ddlChange
	for _, c := range changes {
		if systemSchemas[strings.ToLower(c.id.db)] || !s.cfg.filter.Includes(c.id.db, c.id.name) || s.hist.has(c.id, p) {
			continue
		}
		if c.unknown {
			// The statement's effect depends on a table the history does not know.
			if c.cols, err = s.describe(ctx, c.id); err != nil {
				c.kind, c.cols = changeDrop, nil // gone since: read at its next rows event
			}
		}
		keep = append(keep, c)
	}
	return s.record(ctx, p, false, string(e.Schema), query, keep)
}

func colNames(cols []*colInfo) []string {
	out := make([]string, len(cols))
	for i, c := range cols {
		out[i] = c.name
	}
	return out
}

func sameNames(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !strings.EqualFold(a[i], b[i]) {
			return false
		}
	}
	return true
}
