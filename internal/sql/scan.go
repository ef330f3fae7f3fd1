package sql

import (
	"context"
	"errors"
	"fmt"
	"io"
	"runtime"
	"sort"
	"sync"
	"time"

	gms "github.com/dolthub/go-mysql-server/sql"

	"github.com/magnetar-io/magnetar/internal/columns"
	"github.com/magnetar-io/magnetar/internal/schema"
	"github.com/magnetar-io/magnetar/internal/wire"
	"github.com/magnetar-io/magnetar/internal/wire/compression"
	"github.com/magnetar-io/magnetar/internal/wire/pb"
)

// A scan reads a table's partitions through read-only snapshots taken when it starts (so
// it sees each partition up to its last confirmed entry then, whatever is published
// meanwhile), cut into splits of at most sqlMaxEntriesPerSplit entries of one ledger. A pool
// of sqlSplitParallelism workers reads splits (sqlReadBatchEntries entries per storage
// read), decodes their messages into rows of the projected columns and hands them to the
// engine in batches over a bounded channel: the engine's pace (a LIMIT reached, a slow
// client) stops the reads, and the rows in flight are bounded by the query's memory limit.
// All scans of the server share sqlScanThreads slots: a worker holds one while it reads and
// decodes a split and lets it go while it waits for the engine to take its rows, so a scan
// the engine is not reading (the other side of a join) never holds the slots another needs.

// split is a range of entries of one ledger of one partition.
type split struct {
	log         Log
	part        int32
	ledger      int64
	first, last int64
}

// rowBatch is rows handed to the engine at once; bytes is what they are accounted as.
type rowBatch struct {
	rows  []gms.Row
	bytes int64
}

// scanColumn is one output column: internal (by name) or a value column (by its index in
// the decoded values).
type scanColumn struct {
	col   columns.Column
	value int // index into the decoded values, -1 for internal columns
	pos   int // its position in a row
}

// scanner is one scan of a table.
type scanner struct {
	t     *table
	q     *query
	cols  []scanColumn
	width int   // columns of a row (the table's schema)
	want  []int // layout columns decoded
	cons  constraints

	out    chan rowBatch
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu   sync.Mutex
	err  error
	logs []Log
}

func (t *table) newScanner(ctx *gms.Context, q *query, cons constraints) (*scanner, error) {
	s := &scanner{t: t, q: q, cons: cons, width: len(t.cols)}
	for _, i := range t.projected() {
		c := t.cols[i]
		sc := scanColumn{col: c, value: -1, pos: i}
		if !c.Internal {
			sc.value = len(s.want)
			s.want = append(s.want, t.layout.Index(c.Name))
		}
		s.cols = append(s.cols, sc)
	}
	return s, nil
}

func (s *scanner) fail(err error) {
	s.mu.Lock()
	if s.err == nil {
		s.err = err
	}
	s.mu.Unlock()
	s.cancel()
}

func (s *scanner) failure() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

// start opens the partitions, plans the splits and starts the workers.
func (s *scanner) start(ctx context.Context) {
	ctx, s.cancel = context.WithCancel(ctx)
	workers := s.q.limits.SplitParallelism
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	s.out = make(chan rowBatch, 2*workers)
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		defer close(s.out)
		splits, err := s.plan(ctx)
		if err != nil {
			s.fail(err)
			return
		}
		queue := make(chan split)
		var wg sync.WaitGroup
		for range min(workers, max(len(splits), 1)) {
			wg.Add(1)
			go func() {
				defer wg.Done()
				w := s.newWorker()
				for sp := range queue {
					if !w.acquire(ctx) {
						break
					}
					err := w.read(ctx, sp)
					w.release()
					if err != nil {
						s.fail(err)
					}
				}
				w.flush(ctx)
			}()
		}
	feed:
		for _, sp := range splits {
			select {
			case queue <- sp:
			case <-ctx.Done():
				break feed
			}
		}
		close(queue)
		wg.Wait()
	}()
}

// partitions are the partitions the scan reads (-1: a non-partitioned topic).
func (s *scanner) partitions() []int32 {
	var ps []int32
	if s.t.info.Partitions == 0 {
		ps = []int32{-1}
	} else {
		for p := int32(0); p < int32(s.t.info.Partitions); p++ {
			ps = append(ps, p)
		}
	}
	if s.cons.partitions == nil {
		return ps
	}
	var out []int32
	for _, p := range ps {
		if s.cons.partitions[p] {
			out = append(out, p)
		}
	}
	return out
}

// plan takes the snapshots and cuts what the constraints leave into splits.
func (s *scanner) plan(ctx context.Context) ([]split, error) {
	if s.cons.empty {
		return nil, nil
	}
	var splits []split
	for _, p := range s.partitions() {
		log, err := s.t.db.src.Open(ctx, s.t.db.name, s.t.name, int(p))
		if errors.Is(err, ErrTopicNotFound) {
			continue // a partition never written
		}
		if err != nil {
			return nil, fmt.Errorf("opening %s partition %d: %w", s.t.name, p, err)
		}
		s.mu.Lock()
		s.logs = append(s.logs, log)
		s.mu.Unlock()
		idx := newLogIndex(log.Ledgers())
		lo, hi := s.idRange(idx)
		if s.cons.pubBounded() && lo <= hi {
			if lo, hi, err = s.publishRange(ctx, log, idx, lo, hi); err != nil {
				return nil, err
			}
		}
		for i := lo; i <= hi; {
			l, e := idx.at(i)
			li := idx.ledgerOf(i)
			last := min(hi-idx.cum[li], idx.ledgers[li].Entries-1, e+s.q.limits.MaxEntriesPerSplit-1)
			splits = append(splits, split{log: log, part: p, ledger: l, first: e, last: last})
			i += last - e + 1
		}
	}
	return splits, nil
}

// logIndex numbers a snapshot's entries 0..total-1 across its ledgers.
type logIndex struct {
	ledgers []Ledger
	cum     []int64 // entries before ledger i
	total   int64
}

func newLogIndex(ls []Ledger) *logIndex {
	x := &logIndex{}
	for _, l := range ls {
		if l.Entries <= 0 {
			continue
		}
		x.ledgers = append(x.ledgers, l)
		x.cum = append(x.cum, x.total)
		x.total += l.Entries
	}
	return x
}

func (x *logIndex) ledgerOf(i int64) int {
	return sort.Search(len(x.cum), func(k int) bool { return x.cum[k] > i }) - 1
}

func (x *logIndex) at(i int64) (ledgerID, entryID int64) {
	k := x.ledgerOf(i)
	return x.ledgers[k].ID, i - x.cum[k]
}

// first returns the index of the first entry at or after (ledger, entry).
func (x *logIndex) first(ledger, entry int64) int64 {
	for k, l := range x.ledgers {
		switch {
		case l.ID > ledger:
			return x.cum[k]
		case l.ID == ledger && entry < l.Entries:
			return x.cum[k] + max(entry, 0)
		}
	}
	return x.total
}

// idRange is the index range message-id bounds leave.
func (s *scanner) idRange(x *logIndex) (int64, int64) {
	lo, hi := int64(0), x.total-1
	if s.cons.hasIDLo {
		lo = x.first(s.cons.idLo.ledger, s.cons.idLo.entry)
	}
	if s.cons.hasIDHi {
		hi = x.first(s.cons.idHi.ledger, s.cons.idHi.entry+1) - 1
	}
	return lo, hi
}

// publishRange narrows lo..hi to the entries whose publish times may be in range: a binary
// search for the first entry published at or after the lower bound and the first one after
// the upper bound, O(log n) single-entry reads each.
func (s *scanner) publishRange(ctx context.Context, log Log, x *logIndex, lo, hi int64) (int64, int64, error) {
	pub := func(i int64) (int64, error) {
		l, e := x.at(i)
		es, err := log.Read(ctx, l, e, e)
		if err != nil {
			return 0, err
		}
		s.q.searchReads.Add(1)
		if len(es) != 1 {
			return 0, fmt.Errorf("entry (%d,%d) missing from its snapshot", l, e)
		}
		md, _, err := parseEntry(es[0].Data)
		if err != nil {
			return 0, err
		}
		return int64(md.GetPublishTime()) * 1000, nil
	}
	search := func(lo, hi int64, below func(us int64) bool) (int64, error) {
		for lo < hi {
			mid := lo + (hi-lo)/2
			us, err := pub(mid)
			if err != nil {
				return 0, err
			}
			if below(us) {
				lo = mid + 1
			} else {
				hi = mid
			}
		}
		return lo, nil
	}
	start, err := search(lo, hi+1, func(us int64) bool { return us < s.cons.pubLo })
	if err != nil {
		return 0, 0, err
	}
	end, err := search(start, hi+1, func(us int64) bool { return us <= s.cons.pubHi })
	if err != nil {
		return 0, 0, err
	}
	return start, end - 1, nil
}

// parseEntry parses an entry's metadata (skipping broker entry metadata) and returns it with
// the payload.
func parseEntry(data []byte) (*pb.MessageMetadata, []byte, error) {
	_, rest, err := wire.SplitHeadersAndPayload(data)
	if err != nil {
		return nil, nil, err
	}
	e, err := wire.ParseEntry(rest, false)
	if err != nil {
		return nil, nil, err
	}
	md, err := wire.ParseMetadata(e.Metadata)
	if err != nil {
		return nil, nil, err
	}
	return md, e.Payload, nil
}

// worker reads splits into row batches.
type worker struct {
	s        *scanner
	decoders map[string]*columns.Decoder
	values   []any
	smm      pb.SingleMessageMetadata
	buf      []byte
	batch    rowBatch
	slab     []any
	nulls    gms.Row
	budget   int64
	held     bool // a scan slot (sqlScanThreads)
}

// acquire takes a scan slot; false when ctx ended first.
func (w *worker) acquire(ctx context.Context) bool {
	select {
	case w.s.t.db.srv.scanSlots <- struct{}{}:
		w.held = true
		return true
	case <-ctx.Done():
		return false
	}
}

func (w *worker) release() {
	if w.held {
		w.held = false
		<-w.s.t.db.srv.scanSlots
	}
}

// batchRows is the most rows handed over at once.
const batchRows = 1024

func (s *scanner) newWorker() *worker {
	w := &worker{s: s, decoders: map[string]*columns.Decoder{}, values: make([]any, len(s.want))}
	// The channel holds 2 batches per worker; each worker holds one being filled: the
	// buffered rows stay within half the query's memory limit.
	w.budget = max(s.q.memoryLimit()/int64(2*(cap(s.out)+1)), 64<<10)
	return w
}

// read reads one split, sqlReadBatchEntries entries at a time (fewer at first, so a LIMIT
// that is reached early reads little).
func (w *worker) read(ctx context.Context, sp split) error {
	n := int64(min(16, w.s.q.limits.ReadBatchEntries))
	for e := sp.first; e <= sp.last; {
		if err := ctx.Err(); err != nil {
			return nil // cancelled: the scanner knows why
		}
		last := min(sp.last, e+n-1)
		es, err := sp.log.Read(ctx, sp.ledger, e, last)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("reading %s partition %d ledger %d entries %d..%d: %w", w.s.t.name, sp.part, sp.ledger, e, last, err)
		}
		for _, en := range es {
			if err := w.entry(ctx, sp.part, en); errors.Is(err, errScanStopped) {
				return nil // cancelled: the scanner knows why
			} else if err != nil {
				return err
			}
		}
		e = last + 1
		n = min(2*n, int64(w.s.q.limits.ReadBatchEntries))
	}
	return nil
}

func (w *worker) entry(ctx context.Context, part int32, en Entry) error {
	s := w.s
	if en.Hidden {
		return nil
	}
	md, payload, err := parseEntry(en.Data)
	if err != nil {
		return fmt.Errorf("entry (%d,%d) of %s: %w", en.LedgerID, en.EntryID, s.t.name, err)
	}
	count := wire.MessageCount(md)
	if err := s.q.scanned(1, int64(len(en.Data)), int64(count)); err != nil {
		return err
	}
	pubMs := int64(md.GetPublishTime())
	if us := pubMs * 1000; us < s.cons.pubLo || us > s.cons.pubHi {
		return nil
	}
	rowBytes := int64(len(en.Data))/int64(max(count, 1)) + int64(16*len(s.cols)) + 48
	s.q.rowBytes.Store(rowBytes)
	batched := wire.IsBatch(md)
	if len(s.cols) == 0 && !s.cons.hasIDLo && !s.cons.hasIDHi {
		// count(*) and the like: no column to produce, nothing to decode.
		for range count {
			if err := w.emit(ctx, w.nullRow(), 16); err != nil {
				return err
			}
		}
		return nil
	}
	if md.GetCompression() != pb.CompressionType_NONE {
		if w.buf, err = compression.Decompress(md.GetCompression(), w.buf, payload, int(md.GetUncompressedSize())); err != nil {
			return fmt.Errorf("entry (%d,%d) of %s: %w", en.LedgerID, en.EntryID, s.t.name, err)
		}
		payload = w.buf
	}
	if !batched {
		return w.message(ctx, part, en, md, nil, -1, payload, rowBytes)
	}
	br := wire.NewBatchReader(payload, count)
	for {
		p, err := br.Next(&w.smm)
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("entry (%d,%d) of %s: %w", en.LedgerID, en.EntryID, s.t.name, err)
		}
		if err := w.message(ctx, part, en, md, &w.smm, int64(br.Index()-1), p, rowBytes); err != nil {
			return err
		}
	}
}

// nullRow is a row of NULLs, shared: nothing reads a column the statement does not use.
func (w *worker) nullRow() gms.Row {
	if w.nulls == nil {
		w.nulls = make(gms.Row, w.s.width)
	}
	return w.nulls
}

// message builds the row of one message (smm nil: not batched).
func (w *worker) message(ctx context.Context, part int32, en Entry, md *pb.MessageMetadata, smm *pb.SingleMessageMetadata, idx int64, payload []byte, rowBytes int64) error {
	s := w.s
	id := msgID{en.LedgerID, en.EntryID, idx}
	if !s.cons.match(part, int64(md.GetPublishTime()), id) {
		return nil
	}
	if len(s.cols) == 0 {
		return w.emit(ctx, w.nullRow(), 16)
	}
	if len(s.want) > 0 {
		nullValue := md.GetNullValue()
		key, keyB64 := md.GetPartitionKey(), md.GetPartitionKeyB64Encoded()
		if smm != nil {
			nullValue, key, keyB64 = smm.GetNullValue(), smm.GetPartitionKey(), smm.GetPartitionKeyB64Encoded()
		}
		clear(w.values)
		if !nullValue {
			if d := w.decoder(ctx, md.GetSchemaVersion()); d != nil {
				if err := d.Decode(columns.Message{Payload: payload, Key: key, KeyB64: keyB64}, w.values); err != nil {
					clear(w.values)
					s.t.db.srv.metrics.decodeErrors.Inc()
				}
			}
		}
	}
	if len(w.slab) < s.width {
		w.slab = make([]any, s.width*batchRows)
	}
	row := gms.Row(w.slab[:s.width:s.width])
	w.slab = w.slab[s.width:]
	for _, c := range s.cols {
		if c.value >= 0 {
			row[c.pos] = sqlValue(c.col, w.values[c.value])
			continue
		}
		row[c.pos] = internalValue(c.col.Name, part, md, smm, id)
	}
	return w.emit(ctx, row, rowBytes)
}

// internalValue is an internal column's value for one message.
func internalValue(name string, part int32, md *pb.MessageMetadata, smm *pb.SingleMessageMetadata, id msgID) any {
	switch name {
	case columns.ColPartition:
		return part
	case columns.ColPublishTime:
		return time.UnixMilli(int64(md.GetPublishTime())).UTC()
	case columns.ColEventTime:
		et := md.GetEventTime()
		if smm != nil && smm.EventTime != nil {
			et = smm.GetEventTime()
		}
		if et == 0 {
			return nil
		}
		return time.UnixMilli(int64(et)).UTC()
	case columns.ColMessageID:
		return id.String()
	case columns.ColSequenceID:
		seq := int64(md.GetSequenceId())
		if smm != nil {
			if smm.SequenceId != nil {
				seq = int64(smm.GetSequenceId())
			} else {
				seq += id.batch
			}
		}
		return seq
	case columns.ColProducerName:
		if n := md.GetProducerName(); n != "" {
			return n
		}
		return nil
	case columns.ColKey:
		if smm != nil {
			if smm.PartitionKey != nil {
				return smm.GetPartitionKey()
			}
			return nil
		}
		if md.PartitionKey != nil {
			return md.GetPartitionKey()
		}
		return nil
	case columns.ColProperties:
		props := md.GetProperties()
		if smm != nil {
			props = smm.GetProperties()
		}
		b := []byte{'{'}
		for i, kv := range props {
			if i > 0 {
				b = append(b, ',')
			}
			b = columns.AppendJSONString(b, kv.GetKey())
			b = append(b, ':')
			b = columns.AppendJSONString(b, kv.GetValue())
		}
		return string(append(b, '}'))
	}
	return nil
}

// decoder returns the decoder of one schema version (nil when it cannot be decoded).
func (w *worker) decoder(ctx context.Context, version []byte) *columns.Decoder {
	if d, ok := w.decoders[string(version)]; ok {
		return d
	}
	var writer schema.Schema
	if len(version) == 8 {
		if v, err := schema.ParseVersionBytes(version); err == nil {
			if sc, err := w.s.t.db.src.SchemaVersion(ctx, w.s.t.db.name, w.s.t.name, v); err == nil {
				writer = sc
			}
		}
	}
	d, err := w.s.t.layout.Decoder(writer, w.s.want)
	if err != nil {
		d = nil
	}
	if len(w.decoders) < 64 {
		w.decoders[string(version)] = d
	}
	return d
}

// emit adds a row to the batch being filled and hands full batches to the engine.
func (w *worker) emit(ctx context.Context, row gms.Row, size int64) error {
	w.batch.rows = append(w.batch.rows, row)
	w.batch.bytes += size
	if len(w.batch.rows) >= batchRows || w.batch.bytes >= w.budget {
		return w.flush(ctx)
	}
	return nil
}

func (w *worker) flush(ctx context.Context) error {
	if len(w.batch.rows) == 0 {
		return nil
	}
	b := w.batch
	w.batch = rowBatch{rows: make([]gms.Row, 0, batchRows)}
	w.s.q.buffered.Add(b.bytes)
	if err := w.s.q.checkMemory(); err != nil {
		w.s.q.buffered.Add(-b.bytes)
		return err
	}
	// Waiting for the engine is not work: the slot goes to another scan meanwhile.
	held := w.held
	w.release()
	select {
	case w.s.out <- b:
	case <-ctx.Done():
		w.s.q.buffered.Add(-b.bytes)
		return nil
	}
	if held && !w.acquire(ctx) {
		return errScanStopped
	}
	return nil
}

// errScanStopped ends a worker's split when its scan ended while it waited for a slot.
var errScanStopped = errors.New("sql: scan stopped")

// rowIter hands the scan's rows to the engine.
type rowIter struct {
	s   *scanner
	cur rowBatch
	i   int
}

func (it *rowIter) Next(ctx *gms.Context) (gms.Row, error) {
	for it.i >= len(it.cur.rows) {
		if it.cur.rows != nil {
			it.s.q.buffered.Add(-it.cur.bytes)
			it.cur = rowBatch{}
		}
		select {
		case b, ok := <-it.s.out:
			if !ok {
				return nil, it.end(ctx)
			}
			it.cur, it.i = b, 0
		case <-ctx.Done():
			return nil, it.end(ctx)
		}
	}
	r := it.cur.rows[it.i]
	it.i++
	return r, nil
}

// end is the scan's outcome once no row is left: a limit crossed, a read error, the
// statement's deadline, or io.EOF.
func (it *rowIter) end(ctx context.Context) error {
	if err := it.s.q.failure(); err != nil {
		return err
	}
	if err := it.s.failure(); err != nil {
		return err
	}
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return it.s.q.fail(fmt.Errorf("%w: sqlQueryTimeoutSeconds is %d", ErrTimeout, it.s.q.limits.QueryTimeoutSeconds))
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	return io.EOF
}

func (it *rowIter) Close(*gms.Context) error {
	it.s.cancel()
	for b := range it.s.out {
		it.s.q.buffered.Add(-b.bytes)
	}
	if it.cur.rows != nil {
		it.s.q.buffered.Add(-it.cur.bytes)
		it.cur = rowBatch{}
	}
	it.s.wg.Wait()
	it.s.mu.Lock()
	logs := it.s.logs
	it.s.logs = nil
	it.s.mu.Unlock()
	var errs []error
	for _, l := range logs {
		errs = append(errs, l.Close())
	}
	return errors.Join(errs...)
}
