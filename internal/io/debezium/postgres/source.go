// Package postgres is the debezium-postgres source: change data capture from PostgreSQL by
// logical replication (the pgoutput plugin, github.com/jackc/pglogrepl), in Debezium's
// envelope on per-table topics {topic.prefix}.{schema}.{table}.
//
// Configs (Debezium's names): database.hostname, database.port (5432), database.user,
// database.password, database.dbname, topic.prefix (or database.server.name), plugin.name
// (pgoutput only), slot.name (debezium), publication.name (dbz_publication),
// publication.autocreate.mode (all_tables, filtered, disabled), schema.include.list /
// schema.exclude.list / table.include.list / table.exclude.list, snapshot.mode (initial,
// never, no_data, initial_only, when_needed), tombstones.on.delete (true),
// decimal.handling.mode (string, double), status.update.interval.ms (ours: 1000),
// offset.flush.interval.ms (1000), slot.drop.on.stop (false), topic.namespace.
//
// Durability: the slot's confirmed LSN is sent to the server only up to the end of the last
// transaction whose every change the broker has acknowledged (connector.Tracker), so a crash
// of the worker, the broker or the database replays from there and loses nothing. The
// initial snapshot reads the tables in the slot's exported snapshot, so snapshot and stream
// meet exactly at the slot's consistent point; the checkpoint records that the snapshot
// completed only after all its rows are acknowledged (a crash before repeats it).
package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"time"

	"github.com/jackc/pglogrepl"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgproto3"

	"github.com/magnetar-io/magnetar/internal/io/connector"
	"github.com/magnetar-io/magnetar/internal/io/debezium"
)

// Definition is the debezium-postgres connector.
func Definition() *connector.Definition {
	return &connector.Definition{
		Name:           "debezium-postgres",
		Description:    "Debezium PostgreSQL change data capture (logical replication, pgoutput)",
		SourceClass:    "org.apache.pulsar.io.debezium.postgres.DebeziumPostgresSource",
		NewSource:      func() connector.Source { return &source{} },
		SourceRoutes:   true,
		SingleInstance: true,
		SourceFields: []connector.Field{
			{Name: "database.hostname", TypeName: "String", Attributes: map[string]string{"required": "true"}},
			{Name: "database.port", TypeName: "int", Attributes: map[string]string{"defaultValue": "5432"}},
			{Name: "database.user", TypeName: "String", Attributes: map[string]string{"required": "true"}},
			{Name: "database.password", TypeName: "String", Attributes: map[string]string{"sensitive": "true"}},
			{Name: "database.dbname", TypeName: "String", Attributes: map[string]string{"required": "true"}},
			{Name: "topic.prefix", TypeName: "String", Attributes: map[string]string{"required": "true"}},
			{Name: "slot.name", TypeName: "String", Attributes: map[string]string{"defaultValue": "debezium"}},
			{Name: "publication.name", TypeName: "String", Attributes: map[string]string{"defaultValue": "dbz_publication"}},
			{Name: "table.include.list", TypeName: "String"},
			{Name: "snapshot.mode", TypeName: "String", Attributes: map[string]string{"defaultValue": "initial"}},
		},
	}
}

type config struct {
	host, port, user, password, db string
	common                         debezium.Common
	slot, publication, pubMode     string
	filter                         *debezium.Filter
	status                         time.Duration
	dropSlot                       bool
}

func parse(c connector.Config, ns string) (*config, error) {
	cfg := &config{
		host: c.Required("database.hostname"), port: c.String("database.port", "5432"),
		user: c.Required("database.user"), password: c.String("database.password", ""),
		db: c.Required("database.dbname"), common: debezium.ParseCommon(c, ns),
		slot: c.String("slot.name", "debezium"), publication: c.String("publication.name", "dbz_publication"),
		pubMode: c.OneOf("publication.autocreate.mode", "all_tables", "all_tables", "filtered", "disabled"),
		status:  c.Millis("status.update.interval.ms", time.Second), dropSlot: c.Bool("slot.drop.on.stop", false),
	}
	if p := c.OneOf("plugin.name", "pgoutput", "pgoutput", "decoderbufs"); p != "pgoutput" {
		return nil, errors.New("configs: plugin.name: only pgoutput is supported (it ships with PostgreSQL)")
	}
	if _, err := strconv.Atoi(cfg.port); err != nil {
		return nil, fmt.Errorf("configs: database.port: %q is not a port", cfg.port)
	}
	if cfg.status <= 0 {
		cfg.status = time.Second
	}
	var err error
	if cfg.filter, err = debezium.NewFilter(c, "schema"); err != nil {
		return nil, err
	}
	return cfg, c.Err()
}

func (c *config) dsn(replication bool) string {
	u := url.URL{Scheme: "postgres", User: url.UserPassword(c.user, c.password), Host: net.JoinHostPort(c.host, c.port), Path: "/" + c.db}
	q := url.Values{"sslmode": {"prefer"}, "application_name": {"magnetar-debezium"}}
	if replication {
		q.Set("replication", "database")
	}
	u.RawQuery = q.Encode()
	return u.String()
}

// checkpoint is the saved state: how far the stream is acknowledged and whether the initial
// snapshot completed.
type checkpoint struct {
	LSN               string `json:"lsn,omitempty"`
	SnapshotCompleted bool   `json:"snapshot_completed"`
}

// relation is a table as the stream describes it.
type relation struct {
	table    *debezium.Table
	types    []colType
	included bool
}

type source struct {
	cfg       *config
	sc        connector.SourceContext
	repl      *pgconn.PgConn
	rels      map[uint32]*relation
	tracker   connector.Tracker[pglogrepl.LSN]
	cp        checkpoint
	confirmed pglogrepl.LSN
	received  pglogrepl.LSN
	inTxn     bool
	txn       *pglogrepl.BeginMessage
	lastLSN   pglogrepl.LSN
	keyBuf    []byte
}

func (s *source) Validate(c connector.Config) error {
	_, err := parse(c, "public/default")
	return err
}

func (s *source) Run(ctx context.Context, sc connector.SourceContext) error {
	s.sc = sc
	ns := sc.Name()
	if i := lastSlash(ns); i > 0 {
		ns = ns[:i]
	}
	cfg, err := parse(sc.Config(), ns)
	if err != nil {
		return err
	}
	s.cfg, s.rels = cfg, map[uint32]*relation{}
	if b, err := sc.Offsets().Load(ctx); err != nil {
		return err
	} else if len(b) > 0 {
		if err := json.Unmarshal(b, &s.cp); err != nil {
			return fmt.Errorf("debezium-postgres: checkpoint is corrupt: %w", err)
		}
	}
	conn, err := pgx.Connect(ctx, cfg.dsn(false))
	if err != nil {
		return fmt.Errorf("debezium-postgres: connecting: %w", err)
	}
	defer conn.Close(context.Background())
	if err := s.ensurePublication(ctx, conn); err != nil {
		return err
	}
	// The replication connection stays open until Close, which confirms what the
	// receipts that came in after Run returned cover.
	if s.repl, err = pgconn.Connect(ctx, cfg.dsn(true)); err != nil {
		return fmt.Errorf("debezium-postgres: replication connection: %w", err)
	}
	exists, err := slotExists(ctx, conn, cfg.slot)
	if err != nil {
		return err
	}
	switch {
	case !s.cp.SnapshotCompleted && cfg.common.SnapshotFirst():
		if err := s.snapshot(ctx, conn, exists); err != nil {
			return err
		}
		if cfg.common.SnapshotMode == "initial_only" {
			<-ctx.Done()
			return nil
		}
	case !exists && s.cp.SnapshotCompleted && cfg.common.SnapshotMode != "when_needed":
		return fmt.Errorf("debezium-postgres: replication slot %q is gone: changes since the last checkpoint are lost; set snapshot.mode=when_needed to snapshot again", cfg.slot)
	case !exists:
		if s.cp.SnapshotCompleted { // when_needed
			s.cp.SnapshotCompleted = false
			return s.snapshotThenStream(ctx, conn)
		}
		if _, err := pglogrepl.CreateReplicationSlot(ctx, s.repl, cfg.slot, "pgoutput",
			pglogrepl.CreateReplicationSlotOptions{Mode: pglogrepl.LogicalReplication, SnapshotAction: "NOEXPORT_SNAPSHOT"}); err != nil {
			return fmt.Errorf("debezium-postgres: creating slot %s: %w", cfg.slot, err)
		}
		s.cp.SnapshotCompleted = true
		if err := s.save(); err != nil {
			return err
		}
	}
	return s.stream(ctx)
}

func (s *source) snapshotThenStream(ctx context.Context, conn *pgx.Conn) error {
	if err := s.snapshot(ctx, conn, false); err != nil {
		return err
	}
	return s.stream(ctx)
}

func lastSlash(s string) int {
	for i := len(s) - 1; i >= 0; i-- {
		if s[i] == '/' {
			return i
		}
	}
	return -1
}

func slotExists(ctx context.Context, conn *pgx.Conn, slot string) (bool, error) {
	var n int
	if err := conn.QueryRow(ctx, "SELECT count(*) FROM pg_replication_slots WHERE slot_name = $1", slot).Scan(&n); err != nil {
		return false, fmt.Errorf("debezium-postgres: reading pg_replication_slots: %w", err)
	}
	return n > 0, nil
}

// ensurePublication creates or aligns the publication (publication.autocreate.mode).
func (s *source) ensurePublication(ctx context.Context, conn *pgx.Conn) error {
	var n int
	if err := conn.QueryRow(ctx, "SELECT count(*) FROM pg_publication WHERE pubname = $1", s.cfg.publication).Scan(&n); err != nil {
		return fmt.Errorf("debezium-postgres: reading pg_publication: %w", err)
	}
	pub := pgx.Identifier{s.cfg.publication}.Sanitize()
	switch s.cfg.pubMode {
	case "disabled":
		if n == 0 {
			return fmt.Errorf("debezium-postgres: publication %s does not exist and publication.autocreate.mode is disabled", s.cfg.publication)
		}
	case "all_tables":
		if n == 0 {
			if _, err := conn.Exec(ctx, "CREATE PUBLICATION "+pub+" FOR ALL TABLES"); err != nil {
				return fmt.Errorf("debezium-postgres: creating publication: %w", err)
			}
		}
	case "filtered":
		tables, err := s.capturedTables(ctx, conn, "SELECT table_schema, table_name FROM information_schema.tables WHERE table_type = 'BASE TABLE' AND table_schema NOT IN ('pg_catalog', 'information_schema')")
		if err != nil {
			return err
		}
		if len(tables) == 0 {
			return errors.New("debezium-postgres: no table matches the include/exclude lists")
		}
		list := ""
		for i, t := range tables {
			if i > 0 {
				list += ", "
			}
			list += pgx.Identifier{t[0], t[1]}.Sanitize()
		}
		stmt := "CREATE PUBLICATION " + pub + " FOR TABLE " + list
		if n > 0 {
			stmt = "ALTER PUBLICATION " + pub + " SET TABLE " + list
		}
		if _, err := conn.Exec(ctx, stmt); err != nil {
			return fmt.Errorf("debezium-postgres: %s: %w", stmt, err)
		}
	}
	return nil
}

// capturedTables lists (schema, table) rows of query that the filter includes.
func (s *source) capturedTables(ctx context.Context, conn *pgx.Conn, query string, args ...any) ([][2]string, error) {
	rows, err := conn.Query(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("debezium-postgres: listing tables: %w", err)
	}
	defer rows.Close()
	var out [][2]string
	for rows.Next() {
		var sch, tbl string
		if err := rows.Scan(&sch, &tbl); err != nil {
			return nil, err
		}
		if s.cfg.filter.Includes(sch, tbl) {
			out = append(out, [2]string{sch, tbl})
		}
	}
	return out, rows.Err()
}

// save stores the checkpoint.
func (s *source) save() error {
	b, _ := json.Marshal(s.cp)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return s.sc.Offsets().Save(ctx, b)
}

// waitPublished waits until every emitted record is acknowledged.
func (s *source) waitPublished(ctx context.Context) error {
	for s.tracker.Pending() > 0 {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(5 * time.Millisecond):
		}
	}
	return nil
}

func (s *source) Close() error {
	if s.sc == nil || s.cfg == nil {
		return nil
	}
	if s.repl != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		if s.cp.SnapshotCompleted {
			_ = s.sendStatus(ctx)
		}
		_ = s.repl.Close(ctx)
		cancel()
	}
	if lsn := s.confirmable(); lsn > 0 && s.cp.SnapshotCompleted {
		s.cp.LSN = lsn.String()
		if err := s.save(); err != nil {
			return err
		}
	}
	if s.cfg.dropSlot {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if c, err := pgconn.Connect(ctx, s.cfg.dsn(true)); err == nil {
			_ = pglogrepl.DropReplicationSlot(ctx, c, s.cfg.slot, pglogrepl.DropReplicationSlotOptions{Wait: true})
			_ = c.Close(ctx)
		}
	}
	return nil
}

// errorResponse turns a server error in the stream into an error.
func errorResponse(m *pgproto3.ErrorResponse) error {
	return fmt.Errorf("debezium-postgres: server: %s (SQLSTATE %s)", m.Message, m.Code)
}
