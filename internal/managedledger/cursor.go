package managedledger

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/magnetar-io/magnetar/internal/metadata"
)

// Cursor is a subscription's place in a managed ledger: a mark-delete position (every entry
// at or before it is acknowledged), the individually acknowledged entries after it, and a
// read position (the next entry to dispatch). Durable cursors persist their acknowledgement
// state; non-durable cursors (readers) live in memory only. All methods are safe for
// concurrent use.
//
// Read position vs acknowledgements: reads move the read position forward and skip entries
// already acknowledged; acknowledging never moves the read position back. Redelivery is the
// caller's choice: ReadPositions for specific entries (Shared), Rewind or Seek to read again
// from an earlier position (Exclusive/Failover after a consumer change).
type Cursor struct {
	ml      *ManagedLedger
	name    string
	durable bool
	log     *slog.Logger

	// pmu serializes persistence (cursor_persist.go); taken before mu.
	pmu sync.Mutex
	p   persistState

	mu         sync.Mutex
	markDelete Position
	readPos    Position
	acked      RangeSet
	props      map[string]int64      // MarkDeleteWithProperties; persisted with the state
	batchAcks  map[Position][]uint64 // partly acknowledged batches (cursor_batch.go)
	consumed   int64
	readEpoch  uint64 // bumped when the read position is moved by hand
	seq        uint64 // bumped on every change of the persisted state
	closed     bool
	lastActive time.Time

	// Copies of persistState fields for stats, updated under mu after each flush.
	statLedgerID      int64
	statLedgerEntries int64
	statLedgerCreated time.Time

	waiting atomic.Int32 // reads parked in ReadEntriesOrWait
	// entriesRead counts the entries reads from the read position returned (EntriesRead).
	entriesRead atomic.Int64

	// Reads that collected positions but have not fetched them yet, and where the oldest
	// started: the cache keeps entries from there on (cache_evict.go).
	readsInFlight int
	inFlightFrom  Position

	// Active-cursor state for the entry cache (cursor_active.go): attached by the broker
	// while a consumer is connected, backlogged when far behind the end, counted in
	// ml.cur.activeCursors when attached and not backlogged.
	attached, backlogged, counted bool

	// unlimited cursors read past the managed ledger's read limit (read_limit.go).
	unlimited bool
}

func newCursor(ml *ManagedLedger, name string, durable bool, md Position) *Cursor {
	c := &Cursor{ml: ml, name: name, durable: durable, markDelete: md, lastActive: ml.f.now()}
	c.log = ml.log.With("cursor", name)
	c.p.ledgerID, c.p.recoveredLedgerID, c.statLedgerID = -1, -1, -1
	return c
}

// Name is the cursor's (subscription's) name; non-durable cursors have generated names.
func (c *Cursor) Name() string { return c.name }

// IsDurable reports whether the cursor persists its state.
func (c *Cursor) IsDurable() bool { return c.durable }

// ManagedLedger returns the log the cursor reads.
func (c *Cursor) ManagedLedger() *ManagedLedger { return c.ml }

// ---- opening and closing cursors ----

// cursorSet is a managed ledger's cursors: the durable ones by name and the non-durable
// ones (readers). Guarded by ml.mu, except activeCursors.
type cursorSet struct {
	cursors    map[string]*Cursor
	nonDurable map[*Cursor]struct{}
	// activeCursors counts the cursors that are attached and not backlogged; adds are
	// cached only while it is positive (cursor_active.go).
	activeCursors atomic.Int32
	// nonDurableSeq names readers ("reader-N").
	nonDurableSeq int64
}

// OpenCursor returns the durable cursor called name, creating it at initial (the newest or
// the oldest stored entry) if it does not exist.
func (ml *ManagedLedger) OpenCursor(ctx context.Context, name string, initial InitialPosition) (*Cursor, error) {
	if name == "" {
		return nil, fmt.Errorf("%w: empty cursor name", ErrBadConfig)
	}
	ml.metaMu.Lock()
	defer ml.metaMu.Unlock()
	ml.mu.Lock()
	if c, ok := ml.cur.cursors[name]; ok {
		ml.mu.Unlock()
		return c, nil
	}
	if err := ml.stateErrLocked(); err != nil {
		ml.mu.Unlock()
		return nil, err
	}
	md := ml.lastConfirmedLocked()
	if initial == InitialPositionEarliest {
		md = ml.firstLocked()
	}
	ml.mu.Unlock()
	c := newCursor(ml, name, true, md)
	c.readPos = ml.next(md)
	info := &cursorInfo{CursorsLedgerID: -1, MarkDelete: md, State: encodeCursorState(md, &c.acked, 1), LastActive: ml.f.now().UnixMilli()}
	key := ml.f.cursorKey(ml.name, name)
	ver, err := ml.f.store.Put(ctx, key, encodeCursorInfo(info), metadata.NotExists)
	switch {
	case errors.Is(err, metadata.ErrBadVersion):
		// The key exists though this instance does not know the cursor (a failed
		// DeleteCursor left it, or it was created after we opened): adopt it.
		kv, err := ml.f.store.Get(ctx, key)
		if err != nil {
			return nil, fmt.Errorf("managedledger: %s: reading cursor %q: %w", ml.name, name, err)
		}
		if c, err = ml.recoverAndClaimCursor(ctx, name, kv); err != nil {
			return nil, err
		}
	case err != nil:
		return nil, fmt.Errorf("managedledger: %s: creating cursor %q: %w", ml.name, name, err)
	default:
		c.p.version = ver
	}
	ml.mu.Lock()
	defer ml.mu.Unlock()
	if err := ml.stateErrLocked(); err != nil {
		return nil, err
	}
	ml.cur.cursors[name] = c
	return c, nil
}

// NewNonDurableCursor returns an in-memory cursor (a reader) starting at start: the first
// read returns start itself if inclusive, else the entry after it. Earliest and Latest are
// accepted. Non-durable cursors do not hold back trimming: if their position is trimmed they
// continue from the oldest stored entry.
func (ml *ManagedLedger) NewNonDurableCursor(start Position, inclusive bool) (*Cursor, error) {
	ml.mu.Lock()
	defer ml.mu.Unlock()
	if ml.state == stateClosed || ml.state == stateDeleted || ml.closing {
		return nil, fmt.Errorf("%w: %s", ErrClosed, ml.name)
	}
	var md Position
	switch {
	case start == Earliest:
		md = ml.firstLocked()
	case start == Latest:
		md = ml.lastConfirmedLocked()
	case inclusive:
		md = prevPosition(start)
	default:
		md = start
	}
	if lc := ml.lastConfirmedLocked(); lc.Less(md) {
		md = lc
	}
	ml.cur.nonDurableSeq++
	c := newCursor(ml, fmt.Sprintf("reader-%d", ml.cur.nonDurableSeq), false, md)
	c.readPos = ml.nextLocked(md)
	ml.cur.nonDurable[c] = struct{}{}
	// A reader is read by whoever opened it: it is attached while open (Pulsar's
	// non-durable cursors are active), unless it starts far behind (cursor_active.go).
	// c is not shared yet, so its fields need no lock.
	c.attached = true
	c.backlogged = ml.isBackloggedLocked(c.readPos, md)
	c.updateActiveLocked()
	return c, nil
}

// prevPosition is the position whose successor is p, using (L, -1) for the first entry of L.
func prevPosition(p Position) Position {
	if p.EntryID <= 0 {
		return Position{p.LedgerID, -1}
	}
	return Position{p.LedgerID, p.EntryID - 1}
}

// Close releases a non-durable cursor. For a durable cursor it persists the state now; the
// cursor stays part of the managed ledger (DeleteCursor removes it).
func (c *Cursor) Close(ctx context.Context) error {
	if c.durable {
		return c.Flush(ctx)
	}
	c.mu.Lock()
	c.closed = true
	c.updateActiveLocked()
	c.mu.Unlock()
	c.ml.mu.Lock()
	delete(c.ml.cur.nonDurable, c)
	c.ml.mu.Unlock()
	return nil
}

// DeleteCursor removes a durable cursor, its cursor ledger and its metadata. The entries it
// held back become eligible for trimming.
func (ml *ManagedLedger) DeleteCursor(ctx context.Context, name string) error {
	ml.metaMu.Lock()
	defer ml.metaMu.Unlock()
	ml.mu.Lock()
	c, ok := ml.cur.cursors[name]
	if ok {
		delete(ml.cur.cursors, name)
	}
	ml.mu.Unlock()
	if !ok {
		return fmt.Errorf("%w: %s/%s", ErrCursorNotFound, ml.name, name)
	}
	return c.destroy(ctx)
}

// ---- reads ----

// next is nextLocked for callers without mu.
func (ml *ManagedLedger) next(p Position) Position {
	ml.mu.Lock()
	defer ml.mu.Unlock()
	return ml.nextLocked(p)
}

func (c *Cursor) checkOpenLocked() error {
	if c.closed {
		return fmt.Errorf("%w: cursor %s", ErrClosed, c.name)
	}
	return nil
}

// collectLocked picks up to max positions to read from the read position, skipping
// acknowledged entries. Caller holds c.mu; it takes ml.mu.
func (c *Cursor) collectLocked(max int) (positions []Position, atEnd bool, err error) {
	ml := c.ml
	ml.mu.Lock()
	defer ml.mu.Unlock()
	if ml.state == stateClosed || ml.state == stateDeleted {
		return nil, false, fmt.Errorf("%w: %s", ErrClosed, ml.name)
	}
	if max > ml.cfg.MaxReadBatchSize {
		max = ml.cfg.MaxReadBatchSize
	}
	lc := ml.lastConfirmedLocked()
	pos := ml.normalizeLocked(maxPos(c.readPos, ml.nextLocked(c.markDelete)))
	var size readSizeBudget
	for len(positions) < max && !lc.Less(pos) && c.visibleLocked(pos) {
		if c.acked.Contains(pos) {
			pos = ml.normalizeLocked(c.acked.NextGap(pos))
			continue
		}
		if !size.takeLocked(ml, pos.LedgerID) { // the first entry always fits
			break
		}
		positions = append(positions, pos)
		pos = ml.nextLocked(pos)
	}
	c.readPos = pos
	atEnd = len(positions) == 0 && ml.terminated
	return positions, atEnd, nil
}

// ReadEntries returns up to max entries (and about maxBytes; at least one entry if any is
// available; maxBytes <= 0 means no byte limit) from the read position, skipping
// acknowledged ones, and moves the read position past them. It does not wait: with nothing
// to read it returns no entries, or ErrNoMoreEntries if the log is terminated.
func (c *Cursor) ReadEntries(ctx context.Context, max int, maxBytes int64) ([]Entry, error) {
	if max <= 0 {
		return nil, fmt.Errorf("%w: read of %d entries", ErrInvalidPosition, max)
	}
	for attempt := 0; ; attempt++ {
		es, err := c.readEntries(ctx, max, maxBytes)
		// A reader (non-durable cursor) can lose a race with retention; the next attempt
		// starts from the oldest entry still stored.
		if errors.Is(err, errTrimmed) && attempt < 3 {
			continue
		}
		return es, err
	}
}

func (c *Cursor) readEntries(ctx context.Context, max int, maxBytes int64) ([]Entry, error) {
	c.mu.Lock()
	if err := c.checkOpenLocked(); err != nil {
		c.mu.Unlock()
		return nil, err
	}
	start := c.readPos
	positions, atEnd, err := c.collectLocked(max)
	epoch := c.readEpoch
	if len(positions) > 0 {
		c.beginReadLocked(positions[0])
		defer c.endRead() // after any give-back below
	}
	c.mu.Unlock()
	if err != nil {
		return nil, err
	}
	if atEnd {
		return nil, ErrNoMoreEntries
	}
	if len(positions) == 0 {
		return nil, nil
	}
	entries, err := c.ml.readPositions(ctx, positions)
	if err != nil {
		c.ml.readErrors.Add(1)
	}
	if maxBytes > 0 {
		var sum int64
		for i, e := range entries {
			sum += int64(len(e.Data))
			if sum > maxBytes && i > 0 {
				entries = entries[:i]
				break
			}
		}
	}
	if err != nil || len(entries) < len(positions) {
		// Give back what was not returned: the read position goes to just after the last
		// entry handed out (or back to where it was).
		c.mu.Lock()
		if c.readEpoch == epoch {
			if len(entries) > 0 {
				c.readPos = c.ml.next(entries[len(entries)-1].Position)
			} else {
				c.readPos = start
			}
		}
		c.mu.Unlock()
	}
	if err != nil && len(entries) == 0 {
		return nil, err
	}
	c.entriesRead.Add(int64(len(entries)))
	return entries, nil
}

// EntriesRead is the number of entries reads from the cursor's read position returned
// (ReadEntries, ReadEntriesOrWait; not ReadPositions): what a dispatcher fetched, whether it
// could send it or not.
func (c *Cursor) EntriesRead() int64 { return c.entriesRead.Load() }

// ReadEntriesOrWait is ReadEntries that, when nothing is available, waits until new entries
// are added, the log is terminated (ErrNoMoreEntries), the managed ledger closes, or ctx ends.
func (c *Cursor) ReadEntriesOrWait(ctx context.Context, max int, maxBytes int64) ([]Entry, error) {
	c.waiting.Add(1)
	defer c.waiting.Add(-1)
	for {
		c.ml.mu.Lock()
		ch := c.ml.waitChanLocked()
		c.ml.mu.Unlock()
		es, err := c.ReadEntries(ctx, max, maxBytes)
		if err != nil || len(es) > 0 {
			return es, err
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// AsyncReadEntriesOrWait runs ReadEntriesOrWait in the background and calls cb with the
// result (never after cancel returned true). cancel stops a read still waiting and reports
// whether it did; cb is then not called.
func (c *Cursor) AsyncReadEntriesOrWait(max int, maxBytes int64, cb func([]Entry, error)) (cancel func() bool) {
	ctx, stop := context.WithCancel(context.Background())
	var once sync.Once // whoever runs it first decides: deliver, or canceled
	go func() {
		defer stop()
		es, err := c.ReadEntriesOrWait(ctx, max, maxBytes)
		deliver := false
		once.Do(func() { deliver = true })
		if deliver {
			cb(es, err)
			return
		}
		if len(es) > 0 {
			// Canceled after the read took entries: hand them back so the next read
			// returns them again.
			c.mu.Lock()
			c.readPos = minPos(c.readPos, es[0].Position)
			c.mu.Unlock()
		}
	}()
	return func() bool {
		won := false
		once.Do(func() { won = true })
		if won {
			stop()
		}
		return won
	}
}

// HasMoreEntries reports whether a read would return something now.
func (c *Cursor) HasMoreEntries() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	ml := c.ml
	ml.mu.Lock()
	defer ml.mu.Unlock()
	pos := ml.normalizeLocked(maxPos(c.readPos, ml.nextLocked(c.markDelete)))
	lc := ml.lastConfirmedLocked()
	for !lc.Less(pos) && c.visibleLocked(pos) {
		if !c.acked.Contains(pos) {
			return true
		}
		pos = ml.normalizeLocked(c.acked.NextGap(pos))
	}
	return false
}

// ReadPositions reads specific entries again (redelivery), skipping any that are already
// acknowledged or no longer stored. It does not move the read position.
func (c *Cursor) ReadPositions(ctx context.Context, positions []Position) ([]Entry, error) {
	ps := append([]Position(nil), positions...)
	sort.Slice(ps, func(i, j int) bool { return ps[i].Less(ps[j]) })
	c.mu.Lock()
	if err := c.checkOpenLocked(); err != nil {
		c.mu.Unlock()
		return nil, err
	}
	keep := ps[:0]
	c.ml.mu.Lock()
	for i, p := range ps {
		if (i > 0 && p == ps[i-1]) || !c.markDelete.Less(p) || c.acked.Contains(p) || !c.ml.isStoredLocked(p) {
			continue
		}
		keep = append(keep, p)
	}
	c.ml.mu.Unlock()
	c.mu.Unlock()
	if len(keep) == 0 {
		return nil, nil
	}
	return c.ml.readPositions(ctx, keep)
}

// ---- acknowledgements ----

// MarkDelete acknowledges every entry up to and including pos (cumulative ack). A position
// at or before the current mark-delete position is a no-op. State is persisted in the
// background, at most MarkDeleteRateLimit times per second.
func (c *Cursor) MarkDelete(pos Position) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.checkOpenLocked(); err != nil {
		return err
	}
	c.ml.mu.Lock()
	defer c.ml.mu.Unlock()
	if lc := c.ml.lastConfirmedLocked(); lc.Less(pos) {
		return fmt.Errorf("%w: mark-delete %v beyond last confirmed entry %v", ErrInvalidPosition, pos, lc)
	}
	if !c.markDelete.Less(pos) {
		return nil
	}
	c.consumed += c.ml.countLocked(c.markDelete, pos) - c.acked.CountBetween(c.markDelete, pos)
	c.acked.RemoveThrough(pos)
	c.markDelete = pos
	c.foldLocked()
	c.changedLocked()
	return nil
}

// MarkDeleteWithProperties is MarkDelete that also replaces the cursor's properties (a
// small name -> int64 map persisted with the acknowledgement state and restored on
// recovery; the broker's deduplication keeps producer sequence ids there). The properties
// are replaced even when pos does not move the mark-delete position.
func (c *Cursor) MarkDeleteWithProperties(pos Position, props map[string]int64) error {
	for k := range props {
		if len(k) > maxCursorPropKey {
			return fmt.Errorf("%w: cursor property name of %d bytes, limit %d", ErrBadConfig, len(k), maxCursorPropKey)
		}
	}
	if err := c.MarkDelete(pos); err != nil {
		return err
	}
	cp := make(map[string]int64, len(props))
	for k, v := range props {
		cp[k] = v
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.checkOpenLocked(); err != nil {
		return err
	}
	c.props = cp
	c.ml.mu.Lock() // changedLocked reads the config
	defer c.ml.mu.Unlock()
	c.changedLocked()
	return nil
}

// Properties returns a copy of the cursor's properties (nil map when none).
func (c *Cursor) Properties() map[string]int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.props == nil {
		return nil
	}
	cp := make(map[string]int64, len(c.props))
	for k, v := range c.props {
		cp[k] = v
	}
	return cp
}

// Delete acknowledges individual entries, in any order. Entries at or before the mark-delete
// position, already acknowledged or not stored are ignored. When the acknowledged entries
// reach the mark-delete position, it moves forward over them.
func (c *Cursor) Delete(positions ...Position) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.checkOpenLocked(); err != nil {
		return err
	}
	c.ml.mu.Lock()
	defer c.ml.mu.Unlock()
	lc := c.ml.lastConfirmedLocked()
	changed := false
	var bad error
	for _, p := range positions {
		if lc.Less(p) {
			bad = fmt.Errorf("%w: delete %v beyond last confirmed entry %v", ErrInvalidPosition, p, lc)
			continue
		}
		if !c.markDelete.Less(p) || !c.ml.isStoredLocked(p) {
			continue
		}
		if c.acked.Add(p) {
			c.consumed++
			changed = true
		}
	}
	if changed {
		c.foldLocked()
		c.changedLocked()
	}
	return bad
}

// foldLocked moves the mark-delete position over acknowledged spans that start right after
// it (possibly across ledger boundaries). Caller holds c.mu and ml.mu.
func (c *Cursor) foldLocked() {
	ml := c.ml
	for {
		s, ok := c.acked.First()
		if !ok || ml.nextLocked(c.markDelete) != s.start() {
			break
		}
		c.markDelete = s.end()
		c.acked.RemoveThrough(s.end())
	}
	c.pruneBatchAcksLocked()
	if n := ml.nextLocked(c.markDelete); c.readPos.Less(n) {
		c.readPos = n
	}
}

// changedLocked records a change of the persisted state and schedules a flush. Caller holds
// c.mu and ml.mu.
func (c *Cursor) changedLocked() {
	c.seq++
	c.lastActive = c.ml.f.now()
	if c.durable {
		c.scheduleFlushLocked(c.ml.cfg.MarkDeleteRateLimit)
	}
}

// IsAcknowledged reports whether pos is acknowledged (at or before the mark-delete
// position, or individually).
func (c *Cursor) IsAcknowledged(pos Position) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return !c.markDelete.Less(pos) || c.acked.Contains(pos)
}

// Skip acknowledges the next n unacknowledged entries after the mark-delete position, as
// if they had been consumed (pulsar-admin topics skip).
func (c *Cursor) Skip(n int64) error {
	if n <= 0 {
		return nil
	}
	c.mu.Lock()
	target := c.skipTargetLocked(n)
	c.mu.Unlock()
	return c.MarkDelete(target)
}

// skipTargetLocked finds the position after which n unacknowledged entries lie past the
// mark-delete position, jumping over acknowledged spans instead of walking every entry.
func (c *Cursor) skipTargetLocked(n int64) Position {
	ml := c.ml
	ml.mu.Lock()
	defer ml.mu.Unlock()
	pos := c.markDelete
	for _, s := range c.acked.spans {
		gap := ml.countLocked(pos, prevPosition(s.start()))
		if gap >= n {
			return ml.advanceLocked(pos, n)
		}
		n -= gap
		pos = s.end()
	}
	return ml.advanceLocked(pos, n)
}

// SkipToEnd acknowledges everything stored (clear backlog).
func (c *Cursor) SkipToEnd() error {
	return c.MarkDelete(c.ml.LastConfirmedEntry())
}

// ResetCursor moves the cursor so that the next read returns pos (or the first stored entry
// after it): the mark-delete position goes to just before pos, individual acks are dropped,
// and the new state is persisted before returning. Earliest and Latest are accepted.
func (c *Cursor) ResetCursor(ctx context.Context, pos Position) error {
	ml := c.ml
	ml.metaMu.Lock() // a trim must not delete the ledger we move back to
	c.mu.Lock()
	if err := c.checkOpenLocked(); err != nil {
		c.mu.Unlock()
		ml.metaMu.Unlock()
		return err
	}
	ml.mu.Lock()
	switch {
	case pos == Earliest:
		pos = ml.normalizeLocked(ml.firstLocked())
	case pos == Latest:
		pos = ml.endLocked()
	default:
		pos = ml.normalizeLocked(pos)
	}
	c.markDelete = prevPosition(pos)
	c.readPos = pos
	c.acked.Clear()
	clear(c.batchAcks)
	c.readEpoch++
	c.changedLocked()
	ml.notifyLocked() // wake parked reads: there may be entries to read again
	ml.mu.Unlock()
	c.mu.Unlock()
	ml.metaMu.Unlock()
	return c.Flush(ctx)
}

// ResetToPublishTime resets the cursor to the first entry published at or after t, using
// publishTime to read an entry's publish time (the broker passes its message-metadata
// parser).
func (c *Cursor) ResetToPublishTime(ctx context.Context, t time.Time, publishTime func([]byte) (time.Time, error)) error {
	pos, err := c.ml.FindByPublishTime(ctx, t, publishTime)
	if err != nil {
		return err
	}
	return c.ResetCursor(ctx, pos)
}

// Rewind moves the read position back to the first unacknowledged entry, so unacknowledged
// entries already read are read again.
func (c *Cursor) Rewind() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.readPos = c.ml.next(c.markDelete)
	c.readEpoch++
	c.ml.wakeReaders()
}

// wakeReaders wakes parked reads so that they look again after a cursor moved back: entries
// it can read again are not "new entries" and would otherwise wait for the next add.
func (ml *ManagedLedger) wakeReaders() {
	ml.mu.Lock()
	defer ml.mu.Unlock()
	ml.notifyLocked()
}

// Seek moves the read position to pos (never before the first unacknowledged entry).
func (c *Cursor) Seek(pos Position) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.readPos = maxPos(pos, c.ml.next(c.markDelete))
	c.readEpoch++
	c.ml.wakeReaders()
}

// ---- state ----

// MarkDeletePosition is the newest position at or before which everything is acknowledged.
func (c *Cursor) MarkDeletePosition() Position {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.markDelete
}

// ReadPosition is the next position a read starts from.
func (c *Cursor) ReadPosition() Position {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.ml.normalize(maxPos(c.readPos, c.ml.next(c.markDelete)))
}

func (ml *ManagedLedger) normalize(p Position) Position {
	ml.mu.Lock()
	defer ml.mu.Unlock()
	return ml.normalizeLocked(p)
}

// Backlog is the number of stored entries not yet acknowledged.
func (c *Cursor) Backlog() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	n, _ := c.backlogLocked()
	return n
}

// BacklogSize estimates the bytes of the unacknowledged entries.
func (c *Cursor) BacklogSize() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, sz := c.backlogLocked()
	return sz
}

func (c *Cursor) backlogLocked() (int64, int64) {
	ml := c.ml
	ml.mu.Lock()
	defer ml.mu.Unlock()
	n, sz := ml.countSizeLocked(c.markDelete, ml.lastConfirmedLocked())
	acked := c.acked.Count()
	if n > 0 && acked > 0 {
		sz -= sz / n * acked
	}
	return max(n-acked, 0), max(sz, 0)
}

// IndividuallyDeletedRanges returns the acknowledged spans after the mark-delete position.
func (c *Cursor) IndividuallyDeletedRanges() []Span {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.acked.Spans()
}

// MessagesConsumed is the number of entries acknowledged through this cursor since it was
// loaded (Pulsar's messagesConsumedCounter).
func (c *Cursor) MessagesConsumed() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.consumed
}
