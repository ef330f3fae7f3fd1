package topics

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"sync"
	"time"

	"github.com/magnetar-io/magnetar/internal/managedledger"
	"github.com/magnetar-io/magnetar/internal/wire"
	"github.com/magnetar-io/magnetar/internal/wire/compression"
	"github.com/magnetar-io/magnetar/internal/wire/pb"
)

// Topic compaction, as Pulsar does it (pulsar-admin topics compact, compactionThreshold):
// a run reads the previous compacted ledger and then the topic from the compaction horizon
// to its end, keeps the newest message of every key (an empty or null payload deletes the
// key; messages without a key are dropped), and writes the entries that still hold a live
// message to a new side ledger (compaction_record.go). It then records that ledger and the
// new horizon together as the __compaction cursor's mark-delete position and its
// CompactedTopicLedger property, flushed, and only then deletes the previous ledger. A run
// that dies before the flush leaves the previous state whole; one that dies after it leaves
// the new state whole. Either way the ledger it would have deleted is named by a property
// recorded before the step (CompactionPendingLedger, CompactionPreviousLedger), and the
// next run deletes it, so a crash leaks no ledger.
// Readers with readCompacted (compaction_read.go) read the compacted ledger up to the
// horizon and the topic after it.

const (
	// compactionCursorName is Pulsar's name for the compactor's subscription.
	compactionCursorName = "__compaction"
	// compactedLedgerProperty is the cursor property naming the compacted ledger.
	compactedLedgerProperty = "CompactedTopicLedger"
	// compactionPendingProperty and compactionPreviousProperty name, while a run is
	// between steps, the ledger it is writing and the ledger it replaced (ours, not
	// Pulsar's): whatever a crash leaves under them is deleted by the next run.
	compactionPendingProperty  = "CompactionPendingLedger"
	compactionPreviousProperty = "CompactionPreviousLedger"
	// compactionReadBatch is how many entries a run reads at a time.
	compactionReadBatch = 100
	// compactionTimeout bounds one run.
	compactionTimeout = time.Hour
)

// ErrCompactionRunning is a compaction request while one runs (the admin API answers 409).
var ErrCompactionRunning = errors.New("topics: compaction already in progress")

// compactionFault is nil except in tests, which stop a run at a step as a crash there
// would: "switch" (the new ledger written, not yet recorded) or "delete" (recorded and
// flushed, the previous ledger not yet deleted, nothing switched in memory).
var compactionFault func(step string) error

// CompactionStatus is Pulsar's LongRunningProcessStatus of a topic's compaction.
type CompactionStatus struct {
	Status    string // NOT_RUN, RUNNING, SUCCESS, ERROR
	LastError string
}

// CompactionStats are the compaction fields of Pulsar's topic stats (CompactionStats).
type CompactionStats struct {
	LastCompactionRemovedEventCount   int64 `json:"lastCompactionRemovedEventCount"`
	LastCompactionSucceedTimestamp    int64 `json:"lastCompactionSucceedTimestamp"`
	LastCompactionFailedTimestamp     int64 `json:"lastCompactionFailedTimestamp"`
	LastCompactionDurationTimeInMills int64 `json:"lastCompactionDurationTimeInMills"`
}

// compactedView is one compacted ledger, immutable once built: every record's position in
// order, and the horizon (the last topic entry the run read).
type compactedView struct {
	r         *managedledger.SideReader
	horizon   Position
	positions []Position // record i is entry i of the ledger
	size      int64
}

// first is the index of the first record after p, len(positions) if none.
func (v *compactedView) firstAfter(p Position) int {
	return sort.Search(len(v.positions), func(i int) bool { return p.Less(v.positions[i]) })
}

// compaction is a topic's compaction state.
type compaction struct {
	mu      sync.Mutex
	running bool
	status  CompactionStatus
	stats   CompactionStats
	cancel  context.CancelFunc // ends the running compaction (topic close)
	loaded  bool               // view reflects the stored state
	view    *compactedView     // nil: never compacted
	closed  bool
	loading sync.Mutex // one load of the stored view at a time
}

// Compact starts compacting the topic in the background (PUT …/compaction); one run per
// topic at a time.
func (s *Service) Compact(ctx context.Context, name Name) error {
	t, err := s.persistentTopic(ctx, name, false)
	if err != nil {
		return err
	}
	return t.startCompaction()
}

// CompactionStatus reports the topic's last (or running) compaction.
func (s *Service) CompactionStatus(ctx context.Context, name Name) (CompactionStatus, error) {
	t, err := s.persistentTopic(ctx, name, false)
	if err != nil {
		return CompactionStatus{}, err
	}
	t.cmp.mu.Lock()
	defer t.cmp.mu.Unlock()
	if t.cmp.status.Status == "" {
		return CompactionStatus{Status: "NOT_RUN"}, nil
	}
	return t.cmp.status, nil
}

func (t *Topic) startCompaction() error {
	c := &t.cmp
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case c.closed:
		return fmt.Errorf("%w: topic %s is closing", wire.ErrServiceNotReady, t.full)
	case c.running:
		return fmt.Errorf("%w: %s", ErrCompactionRunning, t.full)
	}
	ctx, cancel := context.WithTimeout(context.Background(), compactionTimeout)
	c.running, c.cancel = true, cancel
	c.status = CompactionStatus{Status: "RUNNING"}
	go func() {
		defer cancel()
		start := time.Now()
		removed, err := t.compact(ctx)
		now := time.Now()
		t.s.m.compactionDone(err == nil, removed, now.Sub(start))
		c.mu.Lock()
		defer c.mu.Unlock()
		c.running, c.cancel = false, nil
		c.stats.LastCompactionDurationTimeInMills = now.Sub(start).Milliseconds()
		if err != nil {
			t.logg.Warn("compaction failed", "err", err)
			c.status = CompactionStatus{Status: "ERROR", LastError: err.Error()}
			c.stats.LastCompactionFailedTimestamp = now.UnixMilli()
			return
		}
		c.status = CompactionStatus{Status: "SUCCESS"}
		c.stats.LastCompactionSucceedTimestamp = now.UnixMilli()
		c.stats.LastCompactionRemovedEventCount = removed
	}()
	return nil
}

// closeCompaction stops a running compaction and releases the compacted ledger's reader
// (topic close; the stored state stays).
func (t *Topic) closeCompaction() {
	c := &t.cmp
	c.mu.Lock()
	c.closed = true
	if c.cancel != nil {
		c.cancel()
	}
	v := c.view
	c.view, c.loaded = nil, false
	c.mu.Unlock()
	if v != nil {
		_ = v.r.Close()
	}
}

// compactionStats is the topic stats' compaction block.
func (t *Topic) compactionStats() CompactionStats {
	t.cmp.mu.Lock()
	defer t.cmp.mu.Unlock()
	return t.cmp.stats
}

// compactedView returns the topic's compacted ledger, loading it from the __compaction
// cursor's property the first time; nil when the topic was never compacted.
func (t *Topic) compactedView(ctx context.Context) (*compactedView, error) {
	c := &t.cmp
	c.mu.Lock()
	if c.loaded || c.closed {
		v := c.view
		c.mu.Unlock()
		return v, nil
	}
	c.mu.Unlock()
	c.loading.Lock()
	defer c.loading.Unlock()
	c.mu.Lock()
	if c.loaded || c.closed {
		v := c.view
		c.mu.Unlock()
		return v, nil
	}
	c.mu.Unlock()
	v, err := t.loadCompactedView(ctx)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		if v != nil {
			_ = v.r.Close()
		}
		return nil, nil
	}
	c.view, c.loaded = v, true
	return v, nil
}

// loadCompactedView opens the ledger the __compaction cursor names and indexes its records.
func (t *Topic) loadCompactedView(ctx context.Context) (*compactedView, error) {
	cur, ok := t.log.ml.Cursor(compactionCursorName)
	if !ok {
		return nil, nil
	}
	id, ok := cur.Properties()[compactedLedgerProperty]
	if !ok {
		return nil, nil
	}
	r, err := t.log.ml.OpenSideLedger(ctx, id)
	if err != nil {
		return nil, fmt.Errorf("%w: compacted ledger of %s: %w", wire.ErrPersistence, t.full, err)
	}
	v := &compactedView{r: r, horizon: cur.MarkDeletePosition()}
	err = eachCompactedRecord(ctx, r, func(rec compactedRecord, size int) error {
		v.positions = append(v.positions, rec.pos)
		v.size += int64(size)
		return nil
	})
	if err != nil {
		_ = r.Close()
		return nil, err
	}
	return v, nil
}

// eachCompactedRecord calls fn with every record of a compacted ledger in order.
func eachCompactedRecord(ctx context.Context, r *managedledger.SideReader, fn func(rec compactedRecord, size int) error) error {
	last := r.LastEntryID()
	for first := int64(0); first <= last; first += compactionReadBatch {
		datas, err := r.Read(ctx, first, min(first+compactionReadBatch-1, last))
		if err != nil {
			return fmt.Errorf("%w: %w", wire.ErrPersistence, err)
		}
		for i, d := range datas {
			rec, err := decodeCompactedRecord(d)
			if err != nil {
				return fmt.Errorf("%w: compacted ledger %d entry %d: %w", wire.ErrPersistence, r.ID(), first+int64(i), err)
			}
			if err := fn(rec, len(d)); err != nil {
				return err
			}
		}
	}
	return nil
}

// keyLatest is the newest message of a key seen so far.
type keyLatest struct {
	pos   Position
	index int32
	live  bool // a non-empty payload; false: the key is deleted
}

// compact runs one compaction and returns how many messages it removed.
func (t *Topic) compact(ctx context.Context) (int64, error) {
	prev, err := t.compactedView(ctx)
	if err != nil {
		return 0, err
	}
	cur, err := t.log.ml.OpenCursor(ctx, compactionCursorName, managedledger.InitialPositionEarliest)
	if err != nil {
		return 0, mlErr(err)
	}
	if err := t.dropLeftoverLedgers(ctx, cur); err != nil {
		return 0, err
	}
	// Phase one: the newest message of every key, and the horizon.
	latest := map[string]keyLatest{}
	horizon := Position{LedgerID: -1, EntryID: -1}
	var seen int64
	err = t.eachCompactionInput(ctx, prev, func(pos Position, data []byte, kept []uint64) error {
		horizon = pos
		return eachKeyedMessage(data, kept, func(i int32, key string, hasKey, live bool) {
			seen++
			if hasKey {
				latest[key] = keyLatest{pos: pos, index: i, live: live}
			}
		})
	})
	if err != nil {
		return 0, err
	}
	if prev != nil && !prev.horizon.Less(horizon) {
		return 0, nil // nothing new since the last run
	}
	if horizon.EntryID < 0 && prev == nil {
		return 0, nil // an empty topic
	}
	// Phase two: write every entry with a live message to a new ledger.
	w, err := t.log.ml.CreateSideLedger(ctx, "compacted-topic")
	if err != nil {
		return 0, mlErr(err)
	}
	// Recorded before anything is written to it, so a crash cannot leak it.
	pending := map[string]int64{compactionPendingProperty: w.ID()}
	if prev != nil {
		pending[compactedLedgerProperty] = prev.r.ID()
	}
	if err := setCompactionProperties(ctx, cur, cur.MarkDeletePosition(), pending); err != nil {
		_ = w.Close(ctx)
		t.dropLedgerQuietly(w.ID())
		return 0, err
	}
	keptCount, err := t.writeCompacted(ctx, w, prev, horizon, latest)
	if cerr := w.Close(ctx); err == nil && cerr != nil {
		err = fmt.Errorf("%w: closing compacted ledger: %w", wire.ErrPersistence, cerr)
	}
	if err != nil {
		t.dropLedgerQuietly(w.ID())
		return 0, err
	}
	next, err := t.openCompacted(ctx, w.ID(), horizon)
	if err != nil {
		t.dropLedgerQuietly(w.ID())
		return 0, err
	}
	if err := faultAt("switch"); err != nil {
		_ = next.r.Close()
		t.dropLedgerQuietly(w.ID())
		return 0, err
	}
	// The switch: horizon and ledger in one cursor record, durable before anyone uses it.
	switched := map[string]int64{compactedLedgerProperty: w.ID()}
	if prev != nil {
		switched[compactionPreviousProperty] = prev.r.ID()
	}
	if err := cur.MarkDeleteWithProperties(horizon, switched); err != nil {
		_ = next.r.Close()
		t.dropLedgerQuietly(w.ID())
		return 0, mlErr(err)
	}
	if err := cur.Flush(ctx); err != nil {
		// Unknown whether the record reached the store: keep both ledgers, serve neither
		// until a reload reads what is stored.
		_ = next.r.Close()
		t.forgetCompactedView()
		return 0, mlErr(err)
	}
	if err := faultAt("delete"); err != nil {
		_ = next.r.Close()
		return 0, err
	}
	t.cmp.mu.Lock()
	closed := t.cmp.closed
	if !closed {
		t.cmp.view, t.cmp.loaded = next, true
	}
	t.cmp.mu.Unlock()
	if closed {
		_ = next.r.Close()
	}
	if prev != nil {
		_ = prev.r.Close()
		if t.dropLedgerQuietly(prev.r.ID()) {
			// Persisted with the cursor's next flush; until then a restart deletes it again.
			_ = cur.MarkDeleteWithProperties(horizon, map[string]int64{compactedLedgerProperty: w.ID()})
		}
	}
	t.logg.Info("topic compacted", "ledger", w.ID(), "horizon", horizon, "entries", len(next.positions),
		"messages_read", seen, "messages_kept", keptCount)
	return seen - keptCount, nil
}

// forgetCompactedView makes the next use reload the view from the stored state.
func (t *Topic) forgetCompactedView() {
	t.cmp.mu.Lock()
	v := t.cmp.view
	t.cmp.view, t.cmp.loaded = nil, false
	t.cmp.mu.Unlock()
	if v != nil {
		_ = v.r.Close()
	}
}

// openCompacted opens a just-written compacted ledger as the view at horizon.
func (t *Topic) openCompacted(ctx context.Context, id int64, horizon Position) (*compactedView, error) {
	r, err := t.log.ml.OpenSideLedger(ctx, id)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", wire.ErrPersistence, err)
	}
	v := &compactedView{r: r, horizon: horizon}
	err = eachCompactedRecord(ctx, r, func(rec compactedRecord, size int) error {
		v.positions = append(v.positions, rec.pos)
		v.size += int64(size)
		return nil
	})
	if err != nil {
		_ = r.Close()
		return nil, err
	}
	return v, nil
}

// dropLedgerQuietly deletes a compacted ledger no longer needed and tells whether it is
// gone; a failure is logged (the next run tries again when a property still names it).
func (t *Topic) dropLedgerQuietly(id int64) bool {
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	if err := t.log.ml.DeleteSideLedger(ctx, id); err != nil {
		t.logg.Warn("deleting a compacted ledger failed; the next compaction tries again", "ledger", id, "err", err)
		return false
	}
	return true
}

// setCompactionProperties records props with mark-delete position md on the
// __compaction cursor, durably.
func setCompactionProperties(ctx context.Context, cur *managedledger.Cursor, md Position, props map[string]int64) error {
	if err := cur.MarkDeleteWithProperties(md, props); err != nil {
		return mlErr(err)
	}
	return mlErr(cur.Flush(ctx))
}

// dropLeftoverLedgers deletes the ledgers a stopped run left named by the pending and
// previous properties (never the compacted ledger in force), then forgets them.
func (t *Topic) dropLeftoverLedgers(ctx context.Context, cur *managedledger.Cursor) error {
	props := cur.Properties()
	current, hasCurrent := props[compactedLedgerProperty]
	left := false
	for _, k := range []string{compactionPendingProperty, compactionPreviousProperty} {
		id, ok := props[k]
		if !ok {
			continue
		}
		left = true
		if hasCurrent && id == current {
			continue
		}
		if err := t.log.ml.DeleteSideLedger(ctx, id); err != nil {
			return fmt.Errorf("%w: deleting the compacted ledger a stopped run left: %w", wire.ErrPersistence, err)
		}
		t.logg.Info("deleted a compacted ledger a stopped compaction left", "ledger", id)
	}
	if !left {
		return nil
	}
	clean := map[string]int64{}
	if hasCurrent {
		clean[compactedLedgerProperty] = current
	}
	return setCompactionProperties(ctx, cur, cur.MarkDeletePosition(), clean)
}

// writeCompacted writes phase two's records and returns how many messages they keep.
func (t *Topic) writeCompacted(ctx context.Context, w *managedledger.SideWriter, prev *compactedView, horizon Position, latest map[string]keyLatest) (int64, error) {
	var (
		kept     int64
		mu       sync.Mutex
		writeErr error
		inflight = make(chan struct{}, 64)
	)
	err := t.eachCompactionInput(ctx, prev, func(pos Position, data []byte, prevKept []uint64) error {
		if horizon.Less(pos) {
			return io.EOF // written since phase one: the next run takes it
		}
		var mask []uint64
		live := 0
		err := eachKeyedMessage(data, prevKept, func(i int32, key string, hasKey, isLive bool) {
			if l, ok := latest[key]; hasKey && isLive && ok && l.pos == pos && l.index == i {
				live++
				if mask == nil {
					mask = make([]uint64, (msgCountOf(data)+63)/64)
				}
				if int(i/64) < len(mask) {
					mask[i/64] |= 1 << (uint(i) % 64)
				}
			}
		})
		if err != nil || live == 0 {
			return err
		}
		if live == msgCountOf(data) {
			mask = nil // the whole entry
		}
		kept += int64(live)
		rec := appendCompactedRecord(nil, compactedRecord{pos: pos, kept: mask, data: data})
		mu.Lock()
		failed := writeErr
		mu.Unlock()
		if failed != nil {
			return failed
		}
		select {
		case inflight <- struct{}{}:
		case <-ctx.Done():
			return ctx.Err()
		}
		w.AppendAsync(rec, func(_ int64, err error) {
			<-inflight
			if err != nil {
				mu.Lock()
				writeErr = errors.Join(writeErr, err)
				mu.Unlock()
			}
		})
		return nil
	})
	if errors.Is(err, io.EOF) {
		err = nil
	}
	if err != nil {
		return 0, err
	}
	for range cap(inflight) { // wait for every append's result
		select {
		case inflight <- struct{}{}:
		case <-ctx.Done():
			return 0, ctx.Err()
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if writeErr != nil {
		return 0, fmt.Errorf("%w: writing compacted ledger: %w", wire.ErrPersistence, writeErr)
	}
	return kept, nil
}

// eachCompactionInput calls fn with every record of prev and then every entry of the topic
// after prev's horizon, up to what a reader may see now (the read limit open transactions
// set). Markers and entries of aborted transactions are skipped. fn may end the walk with
// io.EOF.
func (t *Topic) eachCompactionInput(ctx context.Context, prev *compactedView, fn func(pos Position, data []byte, kept []uint64) error) error {
	start, inclusive := Earliest, true
	if prev != nil {
		err := eachCompactedRecord(ctx, prev.r, func(rec compactedRecord, _ int) error {
			return fn(rec.pos, rec.data, rec.kept)
		})
		if err != nil {
			return err
		}
		start, inclusive = prev.horizon, false
	}
	c, err := t.log.ml.NewNonDurableCursor(start, inclusive)
	if err != nil {
		return mlErr(err)
	}
	defer func() { _ = c.Close(context.Background()) }()
	for c.HasMoreEntries() {
		es, err := c.ReadEntries(ctx, compactionReadBatch, 0)
		if err != nil {
			return mlErr(err)
		}
		if len(es) == 0 {
			return nil
		}
		for _, e := range es {
			if t.txnHidden(metaOf(e)) {
				continue
			}
			if err := fn(e.Position, e.Data, nil); err != nil {
				return err
			}
		}
	}
	return nil
}

// msgCountOf is the number of messages of a stored entry (1 when it does not parse).
func msgCountOf(data []byte) int { return msgCount(ParseEntryMeta(data)) }

// eachKeyedMessage calls fn for every message of a stored entry that kept allows (nil: all)
// with its batch index, key and whether it carries a value: Pulsar's compaction key is
// the partition key, and an empty payload (or null_value) deletes the key. An encrypted
// batch cannot be looked into: it is reported as one message without a key (so dropped,
// as a message without a key is). A batch that
// does not decode is an error (the run fails rather than dropping data).
func eachKeyedMessage(data []byte, kept []uint64, fn func(i int32, key string, hasKey, live bool)) error {
	e, err := wire.ParseEntry(data, false)
	if err != nil {
		return fmt.Errorf("%w: compaction: %w", wire.ErrPersistence, err)
	}
	md, err := wire.ParseMetadata(e.Metadata)
	if err != nil {
		return fmt.Errorf("%w: compaction: %w", wire.ErrPersistence, err)
	}
	keep := func(i int) bool { return kept == nil || (i/64 < len(kept) && kept[i/64]&(1<<(uint(i)%64)) != 0) }
	if !wire.IsBatch(md) {
		if keep(0) {
			fn(0, md.GetPartitionKey(), md.PartitionKey != nil, len(e.Payload) > 0 && !md.GetNullValue())
		}
		return nil
	}
	if len(md.GetEncryptionKeys()) > 0 {
		if keep(0) {
			fn(0, "", false, true)
		}
		return nil
	}
	body := e.Payload
	if md.GetCompression() != pb.CompressionType_NONE {
		if body, err = compression.Decompress(md.GetCompression(), nil, e.Payload, int(md.GetUncompressedSize())); err != nil {
			return fmt.Errorf("%w: compaction: %w", wire.ErrPersistence, err)
		}
	}
	br := wire.NewBatchReader(body, wire.MessageCount(md))
	var smm pb.SingleMessageMetadata
	for {
		i := br.Index()
		payload, err := br.Next(&smm)
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("%w: compaction: %w", wire.ErrPersistence, err)
		}
		if keep(i) {
			fn(int32(i), smm.GetPartitionKey(), smm.PartitionKey != nil, len(payload) > 0 && !smm.GetNullValue())
		}
	}
}

// dropCompactedLedger deletes the compacted ledger of a log being deleted (it is not one
// of the managed ledger's own, which Delete removes).
func (l *topicLog) dropCompactedLedger(ctx context.Context) {
	cur, ok := l.ml.Cursor(compactionCursorName)
	if !ok {
		return
	}
	if id, ok := cur.Properties()[compactedLedgerProperty]; ok {
		_ = l.ml.DeleteSideLedger(ctx, id) // a leftover costs space only
	}
}

func faultAt(step string) error {
	if compactionFault == nil {
		return nil
	}
	return compactionFault(step)
}
