package txn

import (
	"encoding/binary"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/magnetar-io/magnetar/internal/config"
)

// Batched record logs (Pulsar's transactionLogBatchedWrite* and
// transactionPendingAckBatchedWrite*): records appended close together share one ledger
// entry, so many concurrent transaction operations cost one durable write. A record's
// callback still runs only once its entry is durable.
//
// Entry format: a plain record (its first byte is a record version, 1) or a batch:
//
//	byte     batchMagic = 0xB1
//	uvarint  n (2..maxBatchRecords)
//	n x      (uvarint length (1..maxBatchBytes), the record)
//
// A record is named by its entry and its index in it (recPos). An entry is acknowledged on
// the log's cursor once every record in it is dropped. Replays must keep seeing suffixes
// of a transaction's records (log.go), so the entries of one drop (a transaction's
// records) are acknowledged oldest first: a later one waits until the earlier ones are
// (recordTracker). A batch written and its records dropped before a crash can come back
// whole; readers treat the records without context as they treat any replayed record.

// batchMagic starts a batched entry; records start with their version (1).
const batchMagic = 0xB1

// maxBatchRecords and maxBatchBytes bound what the decoder accepts (the configuration's
// upper bounds).
const (
	maxBatchRecords = 100_000
	maxBatchBytes   = 64 << 20
)

// BatchConfig is a record log's batching (one of a TransactionConfig's two key sets).
type BatchConfig struct {
	Enabled    bool
	MaxRecords int
	MaxBytes   int
	MaxDelay   time.Duration
}

// coordinatorBatch and stateBatch are the batching of the coordinator logs
// (transactionLogBatchedWrite*) and of the topics' state logs
// (transactionPendingAckBatchedWrite*).
func coordinatorBatch(c config.TransactionConfig) BatchConfig {
	return BatchConfig{Enabled: c.LogBatchedWriteEnabled, MaxRecords: c.LogBatchedWriteMaxRecords,
		MaxBytes: c.LogBatchedWriteMaxSize, MaxDelay: time.Duration(c.LogBatchedWriteMaxDelayInMillis) * time.Millisecond}
}

func stateBatch(c config.TransactionConfig) BatchConfig {
	return BatchConfig{Enabled: c.PendingAckBatchedWriteEnabled, MaxRecords: c.PendingAckBatchedWriteMaxRecords,
		MaxBytes: c.PendingAckBatchedWriteMaxSize, MaxDelay: time.Duration(c.PendingAckBatchedWriteMaxDelayInMillis) * time.Millisecond}
}

// recPos is where a record is: its entry and its index there (0 in a plain entry).
type recPos struct {
	Position
	idx int32
}

// encodeBatch is the entry holding recs (one record: the record itself).
func encodeBatch(recs [][]byte) []byte {
	if len(recs) == 1 {
		return recs[0]
	}
	n := 1 + binary.MaxVarintLen64
	for _, r := range recs {
		n += binary.MaxVarintLen64 + len(r)
	}
	b := make([]byte, 0, n)
	b = append(b, batchMagic)
	b = binary.AppendUvarint(b, uint64(len(recs)))
	for _, r := range recs {
		b = binary.AppendUvarint(b, uint64(len(r)))
		b = append(b, r...)
	}
	return b
}

// decodeBatch returns the records of an entry (slices of data).
func decodeBatch(data []byte) ([][]byte, error) {
	if len(data) == 0 || data[0] != batchMagic {
		return [][]byte{data}, nil
	}
	rest := data[1:]
	n, k := binary.Uvarint(rest)
	if k <= 0 || n < 2 || n > maxBatchRecords || n > uint64(len(rest)) {
		return nil, fmt.Errorf("%w: batched entry: bad record count", ErrCorrupt)
	}
	rest = rest[k:]
	out := make([][]byte, 0, n)
	for i := range n {
		l, k := binary.Uvarint(rest)
		if k <= 0 || l == 0 || l > maxBatchBytes || l > uint64(len(rest)-k) {
			return nil, fmt.Errorf("%w: batched entry: bad length of record %d", ErrCorrupt, i)
		}
		out = append(out, rest[k:k+int(l)])
		rest = rest[k+int(l):]
	}
	if len(rest) != 0 {
		return nil, fmt.Errorf("%w: batched entry: %d trailing bytes", ErrCorrupt, len(rest))
	}
	return out, nil
}

// pendingRec is a record waiting for its batch to be written.
type pendingRec struct {
	data []byte
	cb   func(recPos, error)
}

// batchWriter gathers a log's records into batches. A record appended while no entry of
// the log is being written goes at once (an idle log adds no delay); the others gather
// while entries are in flight and go when those are durable, when MaxRecords or MaxBytes
// are reached, or MaxDelay after the first of them, whichever comes first (Pulsar waits
// for the delay or a bound in every case; the bounds mean the same here). At most one
// goroutine writes at a time (the flusher), so entries are in append order; nothing is
// held while it calls AddEntry, whose callbacks may append again.
type batchWriter struct {
	l   *recordLog
	cfg BatchConfig

	mu       sync.Mutex
	pending  []pendingRec
	bytes    int
	timer    *time.Timer
	flushing bool
	inflight int // entries written and not yet durable (or failed)
}

func (w *batchWriter) append(rec []byte, cb func(recPos, error)) {
	w.mu.Lock()
	w.pending = append(w.pending, pendingRec{rec, cb})
	w.bytes += len(rec)
	now := len(w.pending) >= w.cfg.MaxRecords || w.bytes >= w.cfg.MaxBytes || (w.inflight == 0 && !w.flushing)
	if !now && w.timer == nil {
		w.timer = time.AfterFunc(w.cfg.MaxDelay, w.flush)
	}
	w.mu.Unlock()
	if now {
		w.flush()
	}
}

// written notes an entry of the log durable or failed: what gathered meanwhile goes now.
func (w *batchWriter) written() {
	w.mu.Lock()
	w.inflight--
	kick := w.inflight == 0 && len(w.pending) > 0
	w.mu.Unlock()
	if kick {
		// Not here: this runs in the managed ledger's callback, possibly inside its own
		// AddEntry (a writer that answers at once), which AddEntry must not re-enter.
		go w.flush()
	}
}

// flush writes everything pending, in batches within the bounds.
func (w *batchWriter) flush() {
	w.mu.Lock()
	if w.flushing {
		// The flusher at work takes these too when it comes back for more.
		w.mu.Unlock()
		return
	}
	w.flushing = true
	for len(w.pending) > 0 {
		if w.timer != nil {
			w.timer.Stop()
			w.timer = nil
		}
		n, size := 0, 0
		for n < len(w.pending) && n < w.cfg.MaxRecords && (n == 0 || size+len(w.pending[n].data) <= w.cfg.MaxBytes) {
			size += len(w.pending[n].data)
			n++
		}
		batch := slices.Clone(w.pending[:n])
		w.pending = slices.Delete(w.pending, 0, n)
		w.bytes -= size
		w.inflight++
		w.mu.Unlock()
		w.write(batch)
		w.mu.Lock()
	}
	w.flushing = false
	w.mu.Unlock()
}

// write appends one batch; each record's callback runs once it is durable or failed.
func (w *batchWriter) write(batch []pendingRec) {
	recs := make([][]byte, len(batch))
	for i, r := range batch {
		recs[i] = r.data
	}
	err := w.l.ml.AddEntry(encodeBatch(recs), func(p Position, err error) {
		if err == nil && len(batch) > 1 {
			w.l.tracker.added(p, len(batch))
		}
		for i, r := range batch {
			r.cb(recPos{p, int32(i)}, err)
		}
		w.written()
	})
	if err != nil {
		for _, r := range batch {
			r.cb(recPos{}, err)
		}
		w.written()
	}
}

// recordTracker acknowledges entries once all their records are dropped, the entries of
// one drop oldest first. Plain entries (one record) are tracked only while a drop's
// earlier entry holds them back.
type recordTracker struct {
	mu      sync.Mutex
	entries map[Position]*trackedEntry
}

type trackedEntry struct {
	left    int      // records not dropped
	dropped []uint64 // by index
	blocked int      // drops in which an earlier entry is not acknowledged yet
	drops   []*dropGroup
}

// dropGroup is one drop's entries, ascending; entries[:head] are acknowledged.
type dropGroup struct {
	entries []Position
	head    int
}

// added starts tracking a batched entry of n records (appended or replayed).
func (t *recordTracker) added(p Position, n int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.entries == nil {
		t.entries = map[Position]*trackedEntry{}
	}
	if t.entries[p] == nil {
		t.entries[p] = &trackedEntry{left: n, dropped: make([]uint64, (n+63)/64)}
	}
}

// drop marks records dropped and returns the entries that may be acknowledged now.
func (t *recordTracker) drop(ps []recPos) []Position {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.entries == nil {
		t.entries = map[Position]*trackedEntry{}
	}
	var ents []Position
	for _, p := range ps {
		e := t.entries[p.Position]
		if e == nil {
			// A plain entry (or one acknowledged already): tracked while this drop needs it.
			e = &trackedEntry{}
			t.entries[p.Position] = e
		} else if w, bit := int(p.idx)/64, uint64(1)<<(p.idx%64); p.idx >= 0 && w < len(e.dropped) && e.dropped[w]&bit == 0 {
			e.dropped[w] |= bit
			e.left--
		}
		ents = append(ents, p.Position)
	}
	slices.SortFunc(ents, func(a, b Position) int { return a.Compare(b) })
	ents = slices.Compact(ents)
	g := &dropGroup{entries: ents}
	for i, p := range ents {
		e := t.entries[p]
		e.drops = append(e.drops, g)
		if i > 0 {
			e.blocked++
		}
	}
	// Only the first can be free: this drop holds back the others until it is acknowledged.
	var out []Position
	t.releaseLocked(ents[0], &out)
	return out
}

// releaseLocked acknowledges p if nothing holds it, then what that lets go, in turn.
func (t *recordTracker) releaseLocked(p Position, out *[]Position) {
	work := []Position{p}
	for len(work) > 0 {
		p := work[len(work)-1]
		work = work[:len(work)-1]
		e := t.entries[p]
		if e == nil || e.left > 0 || e.blocked > 0 {
			continue
		}
		delete(t.entries, p)
		*out = append(*out, p)
		for _, g := range e.drops {
			g.head++
			if g.head < len(g.entries) {
				next := g.entries[g.head]
				if ne := t.entries[next]; ne != nil {
					ne.blocked--
					work = append(work, next)
				}
			}
		}
	}
}
