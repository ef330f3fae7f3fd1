package lakehouse

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"time"

	"github.com/magnetar-io/magnetar/internal/columns"
	"github.com/magnetar-io/magnetar/internal/schema"
	"github.com/magnetar-io/magnetar/internal/topics"
	"github.com/magnetar-io/magnetar/internal/wire"
	"github.com/magnetar-io/magnetar/internal/wire/pb"
)

// HoldSubscription is the durable subscription through which a table writer holds back the
// topic's retention: its position is the last committed entry, so the topic keeps whatever
// the table does not have yet (its backlog is the writer's lag, in the topic's stats).
const HoldSubscription = "pulsar.iceberg"

// readBatch is how many entries one read asks for.
const readBatch = 256

// Snapshot summary keys of a writer's commit (doc.go).
const (
	summaryTopic     = "magnetar.topic"
	summaryLastEntry = "magnetar.last-entry"
)

// writer writes one topic partition (or non-partitioned topic) into its table: it reads
// from the committed position on, buffers rows, writes data files and commits them
// together with the new position. A writer that fails is restarted by the service from
// the table's committed position, so whatever it had written but not committed is written
// again (the files it left are never referenced).
type writer struct {
	svc   *Service
	name  topics.Name // the partition
	base  topics.Name // the table's topic
	ident Ident
	part  string // partition index, "-1" when not partitioned
	pol   Policy
	log   *slog.Logger

	st *tableStats // shared with the service's stats

	// state while running
	tbl       *icebergTable
	committed Position // in the table
	last      Position // last entry consumed into rows or the dead-letter topic
	layout    *columns.Layout
	schemaVer int64 // topic schema version the table schema follows
	decoders  map[int64]*columns.Decoder
	buf       *rowBuffer
	slots     []int // builder slot of each table column of the layout
	vals      []any
	pending   []dataFile // written, not committed
	pendRows  int64
	gap       int64
	lastMsgs  int64 // messages in entry last
	dlq       *deadLetters
	dec       entryDecoder
}

// run writes until ctx ends or an error; the service restarts it after an error.
func (w *writer) run(ctx context.Context) error {
	t, err := w.svc.topics.Topic(ctx, w.name, topics.Load{})
	if err != nil {
		return fmt.Errorf("loading %s: %w", w.name, err)
	}
	if err := w.open(ctx); err != nil {
		return err
	}
	defer w.close()
	if err := w.hold(ctx, t); err != nil {
		return err
	}
	start := topics.Earliest
	if w.committed != none {
		start = topics.Position{LedgerID: w.committed.Ledger, EntryID: w.committed.Entry}
	}
	r, err := t.NewReader(ctx, start)
	if err != nil {
		return fmt.Errorf("reader on %s: %w", w.name, err)
	}
	defer r.Close()
	w.last = w.committed
	first := true
	interval := w.svc.commitInterval()
	nextCommit := time.Now().Add(interval)
	for {
		rctx, cancel := context.WithDeadline(ctx, nextCommit)
		es, err := r.Read(rctx, readBatch)
		cancel()
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if err != nil && !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, topics.ErrTopicTerminated) {
			return fmt.Errorf("reading %s: %w", w.name, err)
		}
		for _, e := range es {
			p := Position{e.Position.LedgerID, e.Position.EntryID}
			if first {
				first = false
				if w.committed != none && p != w.committed {
					// The committed entry is gone: retention trimmed what the writer
					// had not reached (icebergWriterMaxHoldSeconds). Count it.
					w.gap++
					w.st.gaps.Add(1)
					w.log.Warn("iceberg writer resumes after trimmed entries: the table has a gap", "topic", w.name.String(), "committed", w.committed, "first", p)
				}
			}
			if w.last == none || w.last.Before(p) {
				if err := w.consume(ctx, p, e.Data); err != nil {
					return err
				}
				w.last = p
			} else if p == w.committed {
				// The anchor (moveHold): its messages are in the hold's backlog, not in
				// the lag.
				w.st.setAnchor(entryMessages(e.Data))
			}
		}
		if w.buf != nil && w.buf.bytes >= w.svc.cfg.WriterBufferBytes {
			if err := w.flush(ctx); err != nil {
				return err
			}
		}
		if !time.Now().Before(nextCommit) {
			if err := w.commit(ctx, t); err != nil {
				return err
			}
			nextCommit = time.Now().Add(interval)
		}
	}
}

// open loads or creates the table and the writer's position in it.
func (w *writer) open(ctx context.Context) error {
	reg := w.svc.topics.Schemas()
	latest, err := reg.Latest(ctx, topics.SchemaID(w.base))
	if err != nil {
		return fmt.Errorf("schema of %s: %w", w.base, err)
	}
	if w.layout, err = columns.FromSchema(latest.Schema); err != nil {
		return fmt.Errorf("%w: columns of %s: %w", ErrPolicy, w.base, err)
	}
	w.schemaVer = latest.Version
	tbl, rec, err := w.svc.cat.load(ctx, w.ident)
	if errors.Is(err, ErrNoSuchTable) {
		sc, _, err := evolveSchema(nil, w.layout)
		if err != nil {
			return err
		}
		spec, err := partitionSpec(&sc, w.pol.Partitioning)
		if err != nil {
			return err
		}
		props := map[string]string{
			propTopic:                         w.base.String(),
			propSchemaVersion:                 strconv.FormatInt(latest.Version, 10),
			"write.target-file-size-bytes":    strconv.FormatInt(w.svc.cfg.TargetFileSizeBytes, 10),
			"write.parquet.compression-codec": "zstd",
			propDeleteOldMetadata:             "true",
		}
		tbl, err = w.svc.cat.Create(ctx, w.ident, w.base.String(), sc, spec, props)
		if errors.Is(err, ErrTableExists) { // another partition's writer was first
			tbl, rec, err = w.svc.cat.load(ctx, w.ident)
		}
		if err != nil {
			return err
		}
	} else if err != nil {
		return err
	}
	w.tbl = tbl
	w.committed = none
	if p, ok := rec.Committed[w.part]; ok {
		w.committed = p
	}
	w.st.setCommitted(w.committed)
	if v, err := strconv.ParseInt(tbl.md.Properties[propSchemaVersion], 10, 64); err == nil && v >= w.schemaVer {
		w.schemaVer = v
	} else if err := w.evolve(ctx, latest.Version); err != nil {
		return err
	}
	w.decoders = map[int64]*columns.Decoder{}
	return w.newBuffer()
}

// newBuffer starts a row buffer for the table's current schema.
func (w *writer) newBuffer() error {
	if w.buf != nil {
		w.buf.release()
	}
	buf, err := newRowBuffer(w.tbl.md.schema(), w.tbl.md.spec())
	if err != nil {
		return err
	}
	w.buf = buf
	cols := tableColumns(w.layout)
	w.slots = make([]int, len(cols))
	for i, c := range cols {
		w.slots[i] = buf.slot(c.Name)
	}
	w.vals = make([]any, len(cols))
	return nil
}

func (w *writer) close() {
	if w.buf != nil {
		w.buf.release()
		w.buf = nil
	}
	if w.dlq != nil {
		w.dlq.close()
	}
}

// hold makes sure the hold subscription exists and is at the committed position.
func (w *writer) hold(ctx context.Context, t *topics.Topic) error {
	if t.Subscription(HoldSubscription) == nil {
		err := w.svc.topics.CreateSubscription(ctx, w.name, HoldSubscription, topics.Earliest)
		if err != nil && !errors.Is(err, topics.ErrSubscriptionExists) {
			return fmt.Errorf("hold subscription on %s: %w", w.name, err)
		}
	}
	w.moveHold(ctx)
	return nil
}

// moveHold moves the hold subscription to the committed entry (kept one entry more than
// needed: it is the reader's anchor after a restart).
func (w *writer) moveHold(ctx context.Context) {
	if w.committed == none {
		return
	}
	at := topics.Position{LedgerID: w.committed.Ledger, EntryID: w.committed.Entry}
	if err := w.svc.topics.ResetSubscription(ctx, w.name, HoldSubscription, &at, time.Time{}); err != nil {
		w.log.Debug("moving the iceberg hold subscription", "topic", w.name.String(), "error", err)
	}
}

// consume turns an entry's messages into rows; what cannot be converted goes to the
// dead-letter topic.
func (w *writer) consume(ctx context.Context, p Position, data []byte) error {
	md, msgs, err := w.dec.decode(data)
	w.lastMsgs = 1
	if md != nil {
		w.lastMsgs = int64(wire.MessageCount(md))
	}
	if err != nil {
		return w.deadLetter(ctx, p, -1, md, nil, err)
	}
	// Every message of an entry has the entry's schema version. A newer one evolves the
	// table before any of the entry's rows is buffered, so the commit that evolve makes
	// first covers whole entries only.
	if len(msgs) > 0 && len(msgs[0].schemaVersion) > 0 {
		if v, err := schema.ParseVersionBytes(msgs[0].schemaVersion); err == nil && v > w.schemaVer {
			if err := w.evolve(ctx, v); err != nil {
				return err
			}
		}
	}
	for i := range msgs {
		m := &msgs[i]
		if m.nullValue {
			continue // a tombstone has no row
		}
		ver := int64(-1)
		if len(m.schemaVersion) > 0 {
			if ver, err = schema.ParseVersionBytes(m.schemaVersion); err != nil {
				if err := w.deadLetter(ctx, p, m.batchIndex, md, m, fmt.Errorf("%w: schema version: %w", errUnconvertible, err)); err != nil {
					return err
				}
				continue
			}
		}
		d, err := w.decoder(ctx, ver)
		if err == nil {
			err = w.row(p, md, m, d)
		}
		if err != nil && ver < 0 && errors.Is(err, columns.ErrMalformed) {
			err = w.rowOfSomeVersion(ctx, p, md, m, err)
		}
		if err != nil {
			if err := w.deadLetter(ctx, p, m.batchIndex, md, m, err); err != nil {
				return err
			}
		}
	}
	return nil
}

// maxVersionsTried bounds the schema versions tried on a message that names none.
const maxVersionsTried = 16

// rowOfSomeVersion decodes a message that carries no schema version (the Go client sends
// none on messages it does not batch) with the newest version of the topic's schema that
// decodes it whole: a newer version than the table's evolves the table first (only for a
// message alone in its entry, so that the commit evolve makes covers whole entries), then
// the table's and older ones are tried. first is the error of the latest.
func (w *writer) rowOfSomeVersion(ctx context.Context, p Position, md *pb.MessageMetadata, m *message, first error) error {
	if m.batchIndex < 0 {
		latest, err := w.svc.topics.Schemas().Latest(ctx, topics.SchemaID(w.base))
		if err == nil && latest.Version > w.schemaVer {
			if err := w.evolve(ctx, latest.Version); err != nil {
				return err
			}
			if d, err := w.decoder(ctx, -1); err == nil && w.row(p, md, m, d) == nil {
				return nil
			}
		}
	}
	for v := w.schemaVer; v >= 0 && v > w.schemaVer-maxVersionsTried; v-- {
		if d, err := w.decoder(ctx, v); err == nil && w.row(p, md, m, d) == nil {
			return nil
		}
	}
	return first
}

// decoder returns the decoder of messages written with schema version ver (-1: the
// topic's latest, for producers that sent none).
func (w *writer) decoder(ctx context.Context, ver int64) (*columns.Decoder, error) {
	if d, ok := w.decoders[ver]; ok {
		return d, nil
	}
	var ws schema.Schema
	if ver >= 0 {
		e, err := w.svc.topics.Schemas().Get(ctx, topics.SchemaID(w.base), ver)
		if err != nil {
			if errors.Is(err, schema.ErrNotFound) {
				return nil, fmt.Errorf("%w: schema version %d is not in the registry", errUnconvertible, ver)
			}
			return nil, err
		}
		ws = e.Schema
	}
	want := make([]int, len(w.layout.Columns))
	for i := range want {
		want[i] = i
	}
	d, err := w.layout.Decoder(ws, want)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", errUnconvertible, err)
	}
	w.decoders[ver] = d
	return d, nil
}

// row decodes m into the buffer.
func (w *writer) row(p Position, md *pb.MessageMetadata, m *message, d *columns.Decoder) error {
	nInt := len(columns.Internal())
	vals := w.vals
	if err := d.Decode(columns.Message{Payload: m.payload, Key: m.key, KeyB64: m.keyB64}, vals[nInt:]); err != nil {
		return fmt.Errorf("%w: %w", errUnconvertible, err)
	}
	internalValues(vals[:nInt], w.name.Partition, p, md, m)
	w.buf.appendRow(w.slots, vals)
	w.pendRows++
	return nil
}

// internalValues fills the internal columns, in columns.Internal's order.
func internalValues(dst []any, partition int, p Position, md *pb.MessageMetadata, m *message) {
	dst[0] = int32(partition)
	dst[1] = nil
	if m.eventTime > 0 {
		dst[1] = time.UnixMilli(int64(m.eventTime)).UTC()
	}
	dst[2] = time.UnixMilli(int64(md.GetPublishTime())).UTC()
	bi := m.batchIndex
	if bi < 0 {
		bi = 0
	}
	dst[3] = "(" + strconv.FormatInt(p.Ledger, 10) + "," + strconv.FormatInt(p.Entry, 10) + "," + strconv.Itoa(int(bi)) + ")"
	dst[4] = int64(m.sequenceID)
	dst[5] = nil
	if n := md.GetProducerName(); n != "" {
		dst[5] = n
	}
	dst[6] = nil
	if m.hasKey {
		dst[6] = m.key
	}
	dst[7] = nil
	if len(m.props) > 0 {
		b := []byte{'{'}
		for i, kv := range m.props {
			if i > 0 {
				b = append(b, ',')
			}
			b = columns.AppendJSONString(b, kv.GetKey())
			b = append(b, ':')
			b = columns.AppendJSONString(b, kv.GetValue())
		}
		dst[7] = string(append(b, '}'))
	}
}

// evolve brings the table schema to the topic's schema version ver: buffered rows are
// written and committed first (they follow the older schema), then the new schema is
// committed, then rows go on in a buffer of the new schema.
func (w *writer) evolve(ctx context.Context, ver int64) error {
	e, err := w.svc.topics.Schemas().Get(ctx, topics.SchemaID(w.base), ver)
	if err != nil {
		return fmt.Errorf("schema version %d of %s: %w", ver, w.base, err)
	}
	l, err := columns.FromSchema(e.Schema)
	if err != nil {
		return fmt.Errorf("columns of %s version %d: %w", w.base, ver, err)
	}
	sc, changed, err := evolveSchema(w.tbl.md.schema(), l)
	if err != nil {
		return err
	}
	if w.buf != nil && (w.buf.rows > 0 || len(w.pending) > 0) {
		if err := w.commitPending(ctx); err != nil {
			return err
		}
	}
	schemaID, lastCol := w.tbl.md.CurrentSchemaID, w.tbl.md.LastColumnID
	tbl, err := w.svc.cat.commit(ctx, w.ident, nil, func(md *Metadata) (*Metadata, changeFiles, error) {
		if md.CurrentSchemaID != schemaID || md.LastColumnID != lastCol {
			return nil, changeFiles{}, errSchemaChanged
		}
		if changed {
			md.addSchema(sc)
		}
		md.Properties[propSchemaVersion] = strconv.FormatInt(ver, 10)
		return md, changeFiles{}, nil
	})
	if errors.Is(err, errSchemaChanged) {
		// Another partition's writer evolved the table meanwhile: take its schema.
		tbl, _, lerr := w.svc.cat.load(ctx, w.ident)
		if lerr != nil {
			return lerr
		}
		w.tbl = tbl
		if v, perr := strconv.ParseInt(tbl.md.Properties[propSchemaVersion], 10, 64); perr == nil && v >= ver {
			w.schemaVer, w.layout, w.decoders = v, l, map[int64]*columns.Decoder{}
			return w.newBuffer()
		}
		return fmt.Errorf("evolving the schema of %s: %w", w.ident, err)
	}
	if err != nil {
		return fmt.Errorf("evolving the schema of %s: %w", w.ident, err)
	}
	w.tbl = tbl
	w.schemaVer, w.layout, w.decoders = ver, l, map[int64]*columns.Decoder{}
	w.log.Info("iceberg table schema evolved", "table", w.ident.String(), "schemaVersion", ver, "columnsChanged", changed)
	return w.newBuffer()
}

// errSchemaChanged: the table's schema is not the one an evolution was built on.
var errSchemaChanged = errors.New("lakehouse: the table schema changed meanwhile")

// flush writes the buffered rows as data files (not yet committed), one per partition.
func (w *writer) flush(ctx context.Context) error {
	parts := w.buf.take()
	if parts == nil {
		return nil
	}
	dfs, err := writeDataFiles(ctx, w.svc.cat.io, w.tbl.md.Location, w.tbl.md.spec(), parts)
	if err != nil {
		return fmt.Errorf("writing data files of %s: %w", w.ident, err)
	}
	w.pending = append(w.pending, dfs...)
	return nil
}

// commit commits what was consumed since the last commit, if anything: the rows' files and
// the position, and moves the hold subscription.
func (w *writer) commit(ctx context.Context, t *topics.Topic) error {
	if w.last == w.committed {
		return nil
	}
	if err := w.commitPending(ctx); err != nil {
		return err
	}
	w.moveHold(ctx)
	return nil
}

// commitPending writes the buffered rows and commits them with the last consumed position.
// Dead letters are made durable first, so the position never passes a record that is in
// neither the table nor the dead-letter topic.
func (w *writer) commitPending(ctx context.Context) error {
	if err := w.flush(ctx); err != nil {
		return err
	}
	if w.dlq != nil {
		if err := w.dlq.wait(ctx); err != nil {
			return err
		}
	}
	if w.last == w.committed {
		return nil
	}
	start := time.Now()
	tbl, err := w.commitFiles(ctx, &positionChange{part: w.part, from: w.committed, to: w.last, gap: w.gap})
	if err != nil {
		w.st.commitErrors.Add(1)
		w.st.setError(err)
		return fmt.Errorf("committing %s: %w", w.ident, err)
	}
	w.tbl = tbl
	w.committed = w.last
	w.gap = 0
	w.st.commits.Add(1)
	w.st.rows.Add(w.pendRows)
	w.st.setCommitted(w.committed)
	w.st.setAnchor(w.lastMsgs)
	w.st.commitSeconds.Observe(time.Since(start).Seconds())
	w.pending, w.pendRows = w.pending[:0], 0
	return nil
}

// commitFiles commits the pending data files (or, with none, the position alone) and
// returns the table after the commit. The partitions of one topic share a table: a commit
// that finds the table changed by another writer is built again on the new metadata with
// the same files (Catalog.commit); the data files need not be rewritten, since a data file
// is valid in any later metadata of the table.
func (w *writer) commitFiles(ctx context.Context, pc *positionChange) (*icebergTable, error) {
	extra := map[string]string{summaryTopic: w.name.String(), summaryLastEntry: w.last.String()}
	return w.svc.cat.commit(ctx, w.ident, pc, func(md *Metadata) (*Metadata, changeFiles, error) {
		if len(w.pending) == 0 {
			// Nothing to add (dead letters, tombstones, markers only): the position moves alone.
			return md, changeFiles{}, nil
		}
		return w.svc.cat.appendFiles(ctx, md, w.pending, extra)
	})
}

// deadLetter publishes an unconvertible message (the whole entry when m is nil) to the
// dead-letter topic with the reason and its origin in its properties.
func (w *writer) deadLetter(ctx context.Context, p Position, batchIndex int32, md *pb.MessageMetadata, m *message, cause error) error {
	if !errors.Is(cause, errUnconvertible) && !errors.Is(cause, columns.ErrMalformed) && !errors.Is(cause, columns.ErrUnsupported) {
		return cause
	}
	if w.dlq == nil {
		w.dlq = newDeadLetters(w.svc, w.deadLetterTopic(), w.log)
	}
	w.st.deadLetters.Add(1)
	w.st.setError(cause)
	return w.dlq.publish(ctx, w.name, p, batchIndex, md, m, cause)
}

func (w *writer) deadLetterTopic() topics.Name {
	if w.pol.DeadLetterTopic != "" {
		if n, err := topics.ParseName(w.pol.DeadLetterTopic); err == nil {
			return n
		}
	}
	n := w.base
	n.Local += w.svc.cfg.DeadLetterSuffix
	n.Partition = -1
	return n
}

// tableStats are a writer's counters, kept by the service across restarts.
type tableStats struct {
	mu            sync.Mutex
	committed     Position
	anchorMsgs    int64 // messages of the committed entry, still in the hold's backlog
	lastCommit    time.Time
	lastError     string
	lastErrorAt   time.Time
	commits       counter
	commitErrors  counter
	rows          counter
	deadLetters   counter
	gaps          counter
	commitSeconds observer
}

func (s *tableStats) setCommitted(p Position) {
	s.mu.Lock()
	s.committed, s.lastCommit = p, time.Now()
	s.mu.Unlock()
}

// setAnchor records how many messages the committed entry holds: the hold subscription
// stays on that entry (moveHold), so they are in its backlog but not in the lag.
func (s *tableStats) setAnchor(n int64) {
	s.mu.Lock()
	s.anchorMsgs = n
	s.mu.Unlock()
}

// entryMessages is the number of messages of a stored entry (1 if it cannot be read).
func entryMessages(data []byte) int64 {
	_, raw, err := wire.SplitHeadersAndPayload(data)
	if err != nil {
		return 1
	}
	en, err := wire.ParseEntry(raw, false)
	if err != nil {
		return 1
	}
	md, err := wire.ParseMetadata(en.Metadata)
	if err != nil {
		return 1
	}
	return int64(wire.MessageCount(md))
}

func (s *tableStats) setError(err error) {
	s.mu.Lock()
	s.lastError, s.lastErrorAt = err.Error(), time.Now()
	s.mu.Unlock()
}
