package topics

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/magnetar-io/magnetar/internal/managedledger"
	"github.com/magnetar-io/magnetar/internal/wire"
	"github.com/magnetar-io/magnetar/internal/wire/pb"
)

// Message deduplication (Pulsar's MessageDeduplication).
//
// Per topic, per producer name, two sequence ids: pushed (the highest accepted at SEND
// time) and persisted (the highest whose entry is durable). A SEND whose highest sequence
// id (the sequence id for a single message) is at or below pushed is not stored: at or below persisted it is a duplicate and gets a
// SEND_RECEIPT with message id (-1, -1), as Pulsar answers; between the two its original is
// still being written, so the outcome is unknown and it gets SEND_ERROR PersistenceError
// (the client reconnects and resends, by then it is a plain duplicate). A failed append
// resets pushed to persisted so the client's resend is stored.
//
// Persistence: the persisted map is snapshotted into the properties of a durable cursor
// named pulsar.dedup (managedledger.Cursor.MarkDeleteWithProperties), with the cursor's
// mark-delete position at the newest entry the snapshot covers, every
// brokerDeduplicationEntriesInterval entries, every brokerDeduplicationSnapshotIntervalSeconds
// and when the topic closes. Loading the topic reads the snapshot and replays the entries
// after the cursor's mark-delete position (producer_name and sequence ids from each
// entry's metadata). The cursor also keeps those entries from being trimmed. It is not a
// subscription: stats, subscription lists and TTL leave it out.

// dedupCursorName is Pulsar's name for the deduplication cursor.
const dedupCursorName = "pulsar.dedup"

// dedupVerdict is what check decided for one SEND.
type dedupVerdict int

const (
	dedupNew       dedupVerdict = iota // store it
	dedupDuplicate                     // already stored: receipt (-1, -1)
	dedupUnknown                       // original still in flight: SEND_ERROR, client resends
)

type dedupProducer struct {
	pushed, persisted int64
	used              uint64 // dedup.clock at the last use, for least-recently-used eviction
}

// dedup is a topic's deduplication state. All methods are safe on a nil *dedup (no
// deduplication) and on a disabled one.
type dedup struct {
	t            *Topic
	maxProducers int
	interval     int
	snapEvery    time.Duration

	enableMu sync.Mutex // serializes setEnabled (load, watch and checker may race)
	// on mirrors enabled so the publish path of topics without deduplication (the
	// default) takes no lock.
	on atomic.Bool

	mu        sync.Mutex
	enabled   bool
	producers map[string]*dedupProducer
	clock     uint64
	cursor    *managedledger.Cursor // nil: state lives in memory only (memory twin)
	since     int                   // entries persisted since the last snapshot
	lastPos   Position              // newest persisted entry
	lastSnap  time.Time
	snapping  bool // a snapshot goroutine is running
	snapAgain bool // state changed while it ran
}

func newDedup(t *Topic) *dedup {
	pc := t.s.cfg.Policies
	return &dedup{
		t: t, maxProducers: pc.BrokerDeduplicationMaxNumberOfProducers,
		interval:  pc.BrokerDeduplicationEntriesInterval,
		snapEvery: time.Duration(pc.BrokerDeduplicationSnapshotIntervalSeconds) * time.Second,
		producers: map[string]*dedupProducer{},
		lastPos:   Position{LedgerID: -1, EntryID: -1},
	}
}

// setEnabled turns deduplication on (recovering the persisted state) or off (dropping the
// state and the cursor, as Pulsar does).
func (d *dedup) setEnabled(ctx context.Context, on bool) error {
	d.enableMu.Lock()
	defer d.enableMu.Unlock()
	d.mu.Lock()
	was := d.enabled
	d.mu.Unlock()
	if was == on {
		return nil
	}
	if !on {
		d.mu.Lock()
		d.enabled = false
		d.on.Store(false)
		d.producers = map[string]*dedupProducer{}
		d.cursor = nil
		d.mu.Unlock()
		if l := d.t.log; l != nil {
			if err := l.deleteCursor(ctx, dedupCursorName); err != nil {
				return fmt.Errorf("topics: %s: dropping the deduplication cursor: %w", d.t.full, err)
			}
		}
		d.t.logg.Info("deduplication disabled")
		return nil
	}
	if err := d.recover(ctx); err != nil {
		return err
	}
	d.t.logg.Info("deduplication enabled")
	return nil
}

// recover loads the snapshot and replays the entries after it.
func (d *dedup) recover(ctx context.Context) error {
	state := map[string]*dedupProducer{}
	var cur *managedledger.Cursor
	lastPos := Position{LedgerID: -1, EntryID: -1}
	if l := d.t.log; l != nil {
		c, err := l.ml.OpenCursor(ctx, dedupCursorName, managedledger.InitialPositionLatest)
		if err != nil {
			return fmt.Errorf("%w: %s: opening the deduplication cursor: %w", wire.ErrServiceNotReady, d.t.full, mlErr(err))
		}
		cur = c
		for name, seq := range c.Properties() {
			state[name] = &dedupProducer{pushed: seq, persisted: seq}
		}
		n, last, err := d.replay(ctx, c.MarkDeletePosition(), state)
		if err != nil {
			return fmt.Errorf("%w: %s: replaying for deduplication: %w", wire.ErrServiceNotReady, d.t.full, err)
		}
		lastPos = last
		d.t.logg.Info("deduplication state recovered", "producers", len(state), "replayed", n)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	d.producers, d.cursor, d.enabled = state, cur, true
	d.on.Store(true)
	d.lastPos, d.since, d.lastSnap = lastPos, 0, time.Now()
	for len(d.producers) > d.maxProducers {
		d.evictLocked()
	}
	return nil
}

// replay reads the entries after md up to the last confirmed one into state.
func (d *dedup) replay(ctx context.Context, md Position, state map[string]*dedupProducer) (int, Position, error) {
	lc := d.t.log.lastConfirmed()
	if lc.EntryID < 0 || !md.Less(lc) {
		return 0, md, nil
	}
	r, err := d.t.log.newReader(md)
	if err != nil {
		return 0, md, err
	}
	defer r.close()
	n := 0
	for {
		rctx, cancel := context.WithTimeout(ctx, opTimeout)
		es, err := r.read(rctx, 100)
		cancel()
		if err != nil {
			return n, md, err
		}
		for _, e := range es {
			if e.Position == md || lc.Less(e.Position) {
				continue
			}
			if name, high, ok := entrySequence(e.Data); ok {
				if p := state[name]; p == nil {
					state[name] = &dedupProducer{pushed: high, persisted: high}
				} else if high > p.persisted {
					p.pushed, p.persisted = high, high
				}
			}
			n++
		}
		if len(es) == 0 || !es[len(es)-1].Position.Less(lc) {
			return n, lc, nil
		}
	}
}

// entrySequence reads producer name and highest sequence id of a stored entry.
func entrySequence(data []byte) (string, int64, bool) {
	e, err := wire.ParseEntry(data, false)
	if err != nil {
		return "", 0, false
	}
	md, err := wire.ParseMetadata(e.Metadata)
	if err != nil || md.GetProducerName() == "" {
		return "", 0, false
	}
	return md.GetProducerName(), HighestSequence(md.GetSequenceId(), md.GetHighestSequenceId(), md), true
}

// HighestSequence is the highest sequence id an entry covers. The Go client sets neither
// CommandSend.highest_sequence_id nor the metadata's for batches, but numbers the messages
// of a batch consecutively from the metadata's sequence_id; sequence ids must grow for
// deduplication anyway, so seq+n-1 never overstates the real highest one.
func HighestSequence(seq, highest uint64, md *pb.MessageMetadata) int64 {
	h := max(seq, highest)
	if md != nil && wire.IsBatch(md) {
		h = max(h, seq+uint64(max(wire.MessageCount(md), 1))-1)
	}
	return int64(h)
}

// check decides what to do with a SEND of producer name covering sequence ids seq..high.
func (d *dedup) check(name string, seq, high int64) dedupVerdict {
	if d == nil || !d.on.Load() {
		return dedupNew
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if !d.enabled {
		return dedupNew
	}
	d.clock++
	p := d.producers[name]
	if p != nil {
		p.used = d.clock
		// A batch counts as seen only when all of it is: one that starts at an old id and
		// ends past pushed is stored whole (its old messages twice) rather than dropped whole.
		if high <= p.pushed {
			if high <= p.persisted {
				return dedupDuplicate
			}
			return dedupUnknown
		}
		if seq <= p.pushed {
			d.t.logg.Debug("batch partly seen before; storing all of it", "producer", name, "seq", seq, "highest", high, "pushed", p.pushed)
		}
		p.pushed = high
		return dedupNew
	}
	if len(d.producers) >= d.maxProducers {
		d.evictLocked()
	}
	d.producers[name] = &dedupProducer{pushed: high, persisted: -1, used: d.clock}
	return dedupNew
}

// evictLocked forgets the least recently used producer.
func (d *dedup) evictLocked() {
	var oldest string
	var at uint64
	first := true
	for n, p := range d.producers {
		if first || p.used < at {
			oldest, at, first = n, p.used, false
		}
	}
	delete(d.producers, oldest)
}

// appended records the outcome of an append of a SEND checked as dedupNew.
func (d *dedup) appended(name string, high int64, pos Position, err error) {
	if d == nil || !d.on.Load() {
		return
	}
	d.mu.Lock()
	if !d.enabled {
		d.mu.Unlock()
		return
	}
	p := d.producers[name]
	if err != nil {
		if p != nil {
			p.pushed = p.persisted // the client resends; it must not look like a duplicate
		}
		d.mu.Unlock()
		return
	}
	if p != nil && high > p.persisted {
		p.persisted = high
	}
	if d.lastPos.Less(pos) {
		d.lastPos = pos
	}
	d.since++
	due := d.cursor != nil && (d.since >= d.interval || (d.snapEvery > 0 && time.Since(d.lastSnap) >= d.snapEvery))
	d.mu.Unlock()
	if due {
		d.snapshotAsync()
	}
}

// lastSequence is last_sequence_id for PRODUCER_SUCCESS: the producer's last persisted
// sequence id, -1 when unknown or deduplication is off.
func (d *dedup) lastSequence(name string) int64 {
	if d == nil {
		return -1
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if p := d.producers[name]; d.enabled && p != nil {
		return p.persisted
	}
	return -1
}

// snapshotAsync takes a snapshot in the background; snapshots never run concurrently, so an
// older one cannot overwrite a newer one's properties.
func (d *dedup) snapshotAsync() {
	d.mu.Lock()
	if d.snapping {
		d.snapAgain = true
		d.mu.Unlock()
		return
	}
	d.snapping = true
	d.mu.Unlock()
	go func() {
		for {
			if err := d.snapshotOnce(); err != nil && !errors.Is(err, managedledger.ErrClosed) {
				d.t.logg.Warn("deduplication snapshot failed; retrying at the next one", "err", err)
			}
			d.mu.Lock()
			if !d.snapAgain {
				d.snapping = false
				d.mu.Unlock()
				return
			}
			d.snapAgain = false
			d.mu.Unlock()
		}
	}()
}

// snapshotOnce moves the cursor to the newest persisted entry with the persisted sequence
// ids as its properties.
func (d *dedup) snapshotOnce() error {
	d.mu.Lock()
	if !d.enabled || d.cursor == nil || d.lastPos.EntryID < 0 {
		d.mu.Unlock()
		return nil
	}
	props := make(map[string]int64, len(d.producers))
	for n, p := range d.producers {
		if p.persisted >= 0 {
			props[n] = p.persisted
		}
	}
	pos, c := d.lastPos, d.cursor
	d.since, d.lastSnap = 0, time.Now()
	d.mu.Unlock()
	return c.MarkDeleteWithProperties(pos, props)
}

// close takes a final snapshot so the next load replays nothing; the managed ledger's close
// then persists the cursor.
func (d *dedup) close() {
	if d == nil {
		return
	}
	if err := d.snapshotSync(); err != nil && !errors.Is(err, managedledger.ErrClosed) {
		d.t.logg.Warn("final deduplication snapshot failed; the next load replays more", "err", err)
	}
}

// snapshotSync takes a snapshot now, after any running one: snapshots stay serialized.
func (d *dedup) snapshotSync() error {
	if d == nil {
		return nil
	}
	for {
		d.mu.Lock()
		if !d.snapping {
			d.snapping = true
			d.mu.Unlock()
			break
		}
		d.mu.Unlock()
		// A background snapshot is a single in-memory cursor update: this wait is short.
		time.Sleep(time.Millisecond)
	}
	err := d.snapshotOnce()
	d.mu.Lock()
	d.snapping = false
	again := d.snapAgain
	d.snapAgain = false
	d.mu.Unlock()
	if again {
		d.snapshotAsync()
	}
	return err
}

// tick takes a time-based snapshot when one is due (called by the policy checker).
func (d *dedup) tick() {
	if d == nil {
		return
	}
	d.mu.Lock()
	due := d.enabled && d.cursor != nil && d.since > 0 && d.snapEvery > 0 && time.Since(d.lastSnap) >= d.snapEvery
	d.mu.Unlock()
	if due {
		d.snapshotAsync()
	}
}

// isSystemCursor tells whether a cursor name belongs to the broker rather than to a
// subscription: deduplication's and compaction's (compaction.go).
func isSystemCursor(name string) bool { return name == dedupCursorName || name == compactionCursorName }
