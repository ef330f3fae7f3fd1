package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pglogrepl"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgproto3"

	"github.com/magnetar-io/magnetar/internal/io/connector"
	"github.com/magnetar-io/magnetar/internal/io/debezium"
)

// snapshot creates the slot with an exported snapshot and reads every captured table in
// it (op "r"), then records the snapshot as completed once all rows are acknowledged.
func (s *source) snapshot(ctx context.Context, conn *pgx.Conn, slotExists bool) error {
	if slotExists {
		// A slot without a completed snapshot: the snapshot is redone from a new slot.
		if err := pglogrepl.DropReplicationSlot(ctx, s.repl, s.cfg.slot, pglogrepl.DropReplicationSlotOptions{Wait: true}); err != nil {
			return fmt.Errorf("debezium-postgres: dropping slot %s of an unfinished snapshot: %w", s.cfg.slot, err)
		}
	}
	res, err := pglogrepl.CreateReplicationSlot(ctx, s.repl, s.cfg.slot, "pgoutput",
		pglogrepl.CreateReplicationSlotOptions{Mode: pglogrepl.LogicalReplication, SnapshotAction: "EXPORT_SNAPSHOT"})
	if err != nil {
		return fmt.Errorf("debezium-postgres: creating slot %s: %w", s.cfg.slot, err)
	}
	consistent, err := pglogrepl.ParseLSN(res.ConsistentPoint)
	if err != nil {
		return err
	}
	tx, err := conn.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
	if err != nil {
		return err
	}
	defer tx.Rollback(context.Background())
	if _, err := tx.Exec(ctx, "SET TRANSACTION SNAPSHOT '"+res.SnapshotName+"'"); err != nil {
		return fmt.Errorf("debezium-postgres: importing the slot's snapshot: %w", err)
	}
	tables, err := s.capturedTables(ctx, conn, "SELECT schemaname, tablename FROM pg_publication_tables WHERE pubname = $1 ORDER BY 1, 2", s.cfg.publication)
	if err != nil {
		return err
	}
	s.sc.Logger().Info("debezium-postgres: snapshot", "tables", len(tables), "consistentPoint", res.ConsistentPoint)
	var held *snapRow // the previous row: the very last one is marked snapshot=last
	now := time.Now()
	for _, t := range tables {
		rel, err := s.describe(ctx, conn, t[0], t[1])
		if err != nil {
			return err
		}
		rr := conn.PgConn().ExecParams(ctx, "SELECT * FROM "+pgx.Identifier{t[0], t[1]}.Sanitize(), nil, nil, nil, nil)
		for rr.NextRow() {
			vals := rr.Values()
			row := make([]any, len(rel.types))
			for i := range rel.types {
				row[i] = s.value(rel, i, 't', vals[i])
			}
			if held != nil {
				if err := s.emit(ctx, held.rel, "r", nil, held.row, "true", 0, now); err != nil {
					return err
				}
			}
			held = &snapRow{rel: rel, row: row}
		}
		if _, err := rr.Close(); err != nil {
			return fmt.Errorf("debezium-postgres: reading %s.%s: %w", t[0], t[1], err)
		}
	}
	if held != nil {
		if err := s.emit(ctx, held.rel, "r", nil, held.row, "last", 0, now); err != nil {
			return err
		}
	}
	if err := tx.Commit(ctx); err != nil {
		return err
	}
	if err := s.waitPublished(ctx); err != nil {
		return err
	}
	s.cp = checkpoint{SnapshotCompleted: true, LSN: consistent.String()}
	return s.save()
}

type snapRow struct {
	rel *relation
	row []any
}

// describe builds a table's relation for the snapshot (the stream's Relation messages
// replace it).
func (s *source) describe(ctx context.Context, conn *pgx.Conn, schema, table string) (*relation, error) {
	name := pgx.Identifier{schema, table}.Sanitize()
	var oid uint32
	if err := conn.QueryRow(ctx, "SELECT $1::regclass::oid", name).Scan(&oid); err != nil {
		return nil, fmt.Errorf("debezium-postgres: %s: %w", name, err)
	}
	keys := map[string]bool{}
	rows, err := conn.Query(ctx, `SELECT a.attname FROM pg_index i JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = ANY(i.indkey)
		WHERE i.indrelid = $1 AND i.indisprimary`, oid)
	if err != nil {
		return nil, err
	}
	for rows.Next() {
		var k string
		if err := rows.Scan(&k); err != nil {
			rows.Close()
			return nil, err
		}
		keys[k] = true
	}
	rows.Close()
	rr := conn.PgConn().ExecParams(ctx, "SELECT * FROM "+name+" LIMIT 0", nil, nil, nil, nil)
	fds := rr.FieldDescriptions()
	cols := make([]*pglogrepl.RelationMessageColumn, len(fds))
	for i, fd := range fds {
		var flags uint8
		if keys[fd.Name] {
			flags = 1
		}
		cols[i] = &pglogrepl.RelationMessageColumn{Flags: flags, Name: fd.Name, DataType: fd.DataTypeOID, TypeModifier: fd.TypeModifier}
	}
	if _, err := rr.Close(); err != nil {
		return nil, err
	}
	rel := s.relation(&pglogrepl.RelationMessage{RelationID: oid, Namespace: schema, RelationName: table, Columns: cols})
	return rel, nil
}

// relation records a table's description (a Relation message: at the start and after DDL).
func (s *source) relation(m *pglogrepl.RelationMessage) *relation {
	cols := make([]debezium.Column, len(m.Columns))
	types := make([]colType, len(m.Columns))
	for i, c := range m.Columns {
		types[i] = newColType(c.DataType, c.TypeModifier, s.cfg.common.DecimalMode)
		cols[i] = debezium.Column{Name: c.Name, Type: types[i].connect, Logical: types[i].logical, Optional: true, Key: c.Flags&1 != 0}
	}
	topic := debezium.TopicName(s.cfg.common.Namespace, s.cfg.common.Prefix, m.Namespace, m.RelationName)
	rel := &relation{table: debezium.NewTable(topic, m.Namespace, m.RelationName, cols), types: types,
		included: s.cfg.filter.Includes(m.Namespace, m.RelationName)}
	s.rels[m.RelationID] = rel
	return rel
}

// value converts column i of a tuple.
func (s *source) value(rel *relation, i int, kind byte, data []byte) any {
	switch kind {
	case 'n':
		return nil
	case 'u':
		return debezium.Unavailable
	}
	if data == nil {
		return nil
	}
	v, err := rel.types[i].convert(data)
	if err != nil {
		s.sc.SourceException(fmt.Errorf("%s.%s column %s: %w", rel.table.Schema, rel.table.Name, rel.table.Columns[i].Name, err))
		return string(data)
	}
	return v
}

func (s *source) tuple(rel *relation, t *pglogrepl.TupleData) []any {
	if t == nil {
		return nil
	}
	row := make([]any, len(rel.types))
	for i, c := range t.Columns {
		if i < len(row) {
			row[i] = s.value(rel, i, c.DataType, c.Data)
		}
	}
	return row
}

// emit publishes one change of rel (and, after a delete, its tombstone).
func (s *source) emit(ctx context.Context, rel *relation, op string, before, after []any, snapshot string, lsn pglogrepl.LSN, commit time.Time) error {
	keyRow := after
	if op == "d" {
		keyRow = before
	}
	s.keyBuf = rel.table.AppendKey(s.keyBuf[:0], keyRow)
	key := string(s.keyBuf)
	var txID, lsnV any
	if s.txn != nil && snapshot == "false" {
		txID = int64(s.txn.Xid)
	}
	if lsn > 0 {
		lsnV = int64(lsn)
	}
	seq := fmt.Sprintf(`["%d","%d"]`, uint64(s.lastLSN), uint64(lsn))
	ev := &debezium.Event{Op: op, Before: before, After: after, TsMs: debezium.NowMs(), Source: []debezium.Field{
		{Name: "version", Value: debezium.Version}, {Name: "connector", Value: "postgresql"}, {Name: "name", Value: s.cfg.common.Prefix},
		{Name: "ts_ms", Value: commit.UnixMilli()}, {Name: "snapshot", Value: snapshot}, {Name: "db", Value: s.cfg.db},
		{Name: "sequence", Value: seq}, {Name: "schema", Value: rel.table.Schema}, {Name: "table", Value: rel.table.Name},
		{Name: "txId", Value: txID}, {Name: "lsn", Value: lsnV}, {Name: "xmin", Value: nil},
	}}
	rec := &connector.Record{Topic: rel.table.Topic, Key: key, Value: rel.table.AppendEnvelope(nil, ev),
		Properties: rel.table.Props, Schema: rel.table.PulsarSchema, EventTime: commit}
	rec.OnAck = s.tracker.Add(0, false)
	if err := s.sc.Emit(ctx, rec); err != nil {
		return err
	}
	if op == "d" && s.cfg.common.Tombstones && key != "" {
		tomb := &connector.Record{Topic: rel.table.Topic, Key: key, Schema: rel.table.PulsarSchema, Properties: rel.table.Props, EventTime: commit}
		tomb.OnAck = s.tracker.Add(0, false)
		return s.sc.Emit(ctx, tomb)
	}
	return nil
}

// stream follows the slot from its confirmed position.
func (s *source) stream(ctx context.Context) error {
	err := pglogrepl.StartReplication(ctx, s.repl, s.cfg.slot, 0, pglogrepl.StartReplicationOptions{
		PluginArgs: []string{"proto_version '1'", "publication_names '" + s.cfg.publication + "'"}})
	if err != nil {
		return fmt.Errorf("debezium-postgres: starting replication from slot %s: %w", s.cfg.slot, err)
	}
	s.sc.Logger().Info("debezium-postgres: streaming", "slot", s.cfg.slot)
	next := time.Now().Add(s.cfg.status)
	lastSave := time.Now()
	for {
		if ctx.Err() != nil {
			return nil
		}
		if !time.Now().Before(next) {
			if err := s.sendStatus(ctx); err != nil {
				return err
			}
			next = time.Now().Add(s.cfg.status)
			if time.Since(lastSave) >= s.cfg.common.FlushInterval {
				if lsn := s.confirmable(); lsn > 0 && lsn.String() != s.cp.LSN {
					s.cp.LSN = lsn.String()
					if err := s.save(); err != nil {
						return err
					}
				}
				lastSave = time.Now()
			}
		}
		rctx, cancel := context.WithDeadline(ctx, next)
		raw, err := s.repl.ReceiveMessage(rctx)
		cancel()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			if pgconn.Timeout(err) {
				continue
			}
			return fmt.Errorf("debezium-postgres: replication stream: %w", err)
		}
		switch m := raw.(type) {
		case *pgproto3.ErrorResponse:
			return errorResponse(m)
		case *pgproto3.CopyData:
			if len(m.Data) == 0 {
				continue
			}
			switch m.Data[0] {
			case pglogrepl.PrimaryKeepaliveMessageByteID:
				pkm, err := pglogrepl.ParsePrimaryKeepaliveMessage(m.Data[1:])
				if err != nil {
					return err
				}
				// Caught up, nothing in flight: everything up to the server's position is
				// handled, so the slot may advance (writes to tables not captured).
				if !s.inTxn && s.tracker.Pending() == 0 && pkm.ServerWALEnd > s.received {
					s.received = pkm.ServerWALEnd
				}
				if pkm.ReplyRequested {
					next = time.Time{}
				}
			case pglogrepl.XLogDataByteID:
				xld, err := pglogrepl.ParseXLogData(m.Data[1:])
				if err != nil {
					return err
				}
				if err := s.handle(ctx, xld); err != nil {
					return err
				}
			}
		}
	}
}

// confirmable is how far the slot may be confirmed: the end of the last transaction whose
// changes are all published, or the idle position.
func (s *source) confirmable() pglogrepl.LSN {
	lsn, _ := s.tracker.Committable()
	if s.tracker.Pending() == 0 && !s.inTxn && s.received > lsn {
		lsn = s.received
	}
	if lsn < s.confirmed {
		lsn = s.confirmed
	}
	return lsn
}

func (s *source) sendStatus(ctx context.Context) error {
	lsn := s.confirmable()
	if lsn == 0 {
		return nil
	}
	if err := pglogrepl.SendStandbyStatusUpdate(ctx, s.repl, pglogrepl.StandbyStatusUpdate{
		WALWritePosition: lsn, WALFlushPosition: lsn, WALApplyPosition: lsn}); err != nil {
		return fmt.Errorf("debezium-postgres: standby status: %w", err)
	}
	s.confirmed = lsn
	return nil
}

func (s *source) handle(ctx context.Context, xld pglogrepl.XLogData) error {
	msg, err := pglogrepl.Parse(xld.WALData)
	if err != nil {
		return fmt.Errorf("debezium-postgres: decoding pgoutput at %s: %w", xld.WALStart, err)
	}
	commit := time.Now()
	if s.txn != nil {
		commit = s.txn.CommitTime
	}
	switch m := msg.(type) {
	case *pglogrepl.RelationMessage:
		s.relation(m)
	case *pglogrepl.BeginMessage:
		s.inTxn, s.txn = true, m
	case *pglogrepl.CommitMessage:
		s.inTxn = false
		s.lastLSN = m.CommitLSN
		s.tracker.Mark(m.TransactionEndLSN)
	case *pglogrepl.InsertMessage:
		rel := s.rels[m.RelationID]
		if rel == nil || !rel.included {
			return nil
		}
		return s.emit(ctx, rel, "c", nil, s.tuple(rel, m.Tuple), "false", xld.WALStart, commit)
	case *pglogrepl.UpdateMessage:
		rel := s.rels[m.RelationID]
		if rel == nil || !rel.included {
			return nil
		}
		after := s.tuple(rel, m.NewTuple)
		if m.OldTupleType == pglogrepl.UpdateMessageTupleTypeKey {
			// The key changed: a delete of the old key (and its tombstone), then a create.
			if err := s.emit(ctx, rel, "d", s.tuple(rel, m.OldTuple), nil, "false", xld.WALStart, commit); err != nil {
				return err
			}
			return s.emit(ctx, rel, "c", nil, after, "false", xld.WALStart, commit)
		}
		return s.emit(ctx, rel, "u", s.tuple(rel, m.OldTuple), after, "false", xld.WALStart, commit)
	case *pglogrepl.DeleteMessage:
		rel := s.rels[m.RelationID]
		if rel == nil || !rel.included {
			return nil
		}
		return s.emit(ctx, rel, "d", s.tuple(rel, m.OldTuple), nil, "false", xld.WALStart, commit)
	}
	return nil
}
