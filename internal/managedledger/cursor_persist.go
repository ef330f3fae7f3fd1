package managedledger

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"time"

	"github.com/magnetar-io/magnetar/internal/ledger"
	"github.com/magnetar-io/magnetar/internal/metadata"
)

// Cursor persistence.
//
// Acks change the cursor in memory only (changedLocked bumps seq and schedules a flush). A
// flush runs at most MarkDeleteRateLimit times per second per cursor, whatever the ack rate,
// and appends the encoded state (mark-delete position + acknowledged spans, capped at
// MaxUnackedRangesToPersist) as one entry of the cursor's own ledger. The metadata store is
// written only when the cursor switches to a new cursor ledger (first flush after open,
// CursorMaxEntriesPerLedger entries, CursorRolloverTime, or a write error) and at most every
// CursorSnapshotInterval otherwise, so metadata writes per cursor stay below the flush rate.
//
// Recovery reads the metadata snapshot, then the last entry of the cursor ledger it names
// (opened with recovery, which also fences a previous owner still appending). The cursor
// ledger's last entry is never older than the snapshot. If the cursor ledger cannot be read
// the snapshot is used: older state only means redelivery, never loss. The new owner then
// claims the key (recoverAndClaimCursor) so a previous owner's later writes fail.
//
// A clean close writes the final state into the metadata snapshot itself and deletes the
// cursor ledger, so the next open needs no ledger read.

type persistState struct {
	version  metadata.Version
	ledger   ledger.Writer // current cursor ledger, nil until the first flush
	ledgerID int64         // ledger the metadata snapshot points at (-1: none)
	// recoveredLedgerID is the previous owner's cursor ledger, deleted once ours replaces it.
	recoveredLedgerID int64
	ledgerEntries     int64
	ledgerCreated     time.Time
	ledgerFailed      bool
	lastSnapshot      time.Time
	persistedSeq      uint64
	lastFlushErr      error
	fenceErr          error // set once a newer owner took the cursor (under pmu)

	// Under Cursor.mu: flush scheduling (real time, not the injected clock: it is a rate).
	scheduled bool
	lastFlush time.Time
	timer     *time.Timer
	stopped   bool
}

func encodeCursorInfo(ci *cursorInfo) []byte {
	b, err := json.Marshal(ci)
	if err != nil {
		panic(fmt.Sprintf("managedledger: encoding cursor info: %v", err))
	}
	return b
}

// scheduleFlushLocked arranges a background flush no sooner than 1/rate after the last one.
// Caller holds c.mu; rate is the managed ledger's MarkDeleteRateLimit.
func (c *Cursor) scheduleFlushLocked(rate float64) {
	if c.p.scheduled || c.p.stopped {
		return
	}
	c.p.scheduled = true
	interval := time.Duration(float64(time.Second) / rate)
	delay := time.Until(c.p.lastFlush.Add(interval))
	if delay < 0 {
		delay = 0
	}
	c.p.timer = time.AfterFunc(delay, c.backgroundFlush)
}

func (c *Cursor) backgroundFlush() {
	c.mu.Lock()
	c.p.scheduled = false
	c.p.lastFlush = time.Now()
	stopped := c.p.stopped
	c.mu.Unlock()
	if stopped {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), ledgerOpTimeout)
	defer cancel()
	if err := c.Flush(ctx); err != nil {
		if errors.Is(err, ErrFenced) || errors.Is(err, ErrClosed) {
			return
		}
		c.log.Warn("persisting cursor state failed; retrying at the next flush", "err", err)
		rate := c.ml.Config().MarkDeleteRateLimit
		c.mu.Lock()
		c.scheduleFlushLocked(rate)
		c.mu.Unlock()
	}
}

// Flush persists the cursor state now if it changed since the last flush.
func (c *Cursor) Flush(ctx context.Context) error {
	if !c.durable {
		return nil
	}
	c.pmu.Lock()
	defer c.pmu.Unlock()
	c.mu.Lock()
	if c.p.stopped {
		c.mu.Unlock()
		if c.p.fenceErr != nil {
			return c.p.fenceErr
		}
		return fmt.Errorf("%w: cursor %s", ErrClosed, c.name)
	}
	seq := c.seq
	if seq == c.p.persistedSeq && c.p.ledger != nil {
		c.mu.Unlock()
		return nil
	}
	data, md := c.encodeLocked()
	c.mu.Unlock()
	err := c.persist(ctx, data, md)
	c.mu.Lock()
	// Stats read these under mu, so they never wait for a flush in progress.
	c.statLedgerID, c.statLedgerEntries, c.statLedgerCreated = c.p.ledgerID, c.p.ledgerEntries, c.p.ledgerCreated
	c.mu.Unlock()
	if err != nil {
		c.p.lastFlushErr = err
		return err
	}
	c.p.persistedSeq = seq
	c.p.lastFlushErr = nil
	return nil
}

func (c *Cursor) encodeLocked() ([]byte, Position) {
	c.ml.mu.Lock()
	maxSpans := c.ml.cfg.MaxUnackedRangesToPersist
	c.ml.mu.Unlock()
	return encodeCursorStateFull(c.markDelete, &c.acked, maxSpans, c.props, c.batchAcks), c.markDelete
}

// persist appends data to the cursor ledger, switching ledgers when due. Caller holds pmu.
func (c *Cursor) persist(ctx context.Context, data []byte, md Position) error {
	ml := c.ml
	now := ml.f.now()
	cfg := ml.Config()
	if w := c.p.ledger; w != nil && !c.p.ledgerFailed &&
		c.p.ledgerEntries < cfg.CursorMaxEntriesPerLedger && now.Sub(c.p.ledgerCreated) < cfg.CursorRolloverTime {
		_, err := w.Append(ctx, data)
		if err == nil {
			c.p.ledgerEntries++
			if now.Sub(c.p.lastSnapshot) >= cfg.CursorSnapshotInterval {
				return c.writeInfo(ctx, w.ID(), data, md)
			}
			return nil
		}
		if errors.Is(err, ledger.ErrFenced) {
			return c.fenced(err)
		}
		c.log.Warn("cursor ledger append failed; switching to a new cursor ledger", "ledger", w.ID(), "err", err)
		c.p.ledgerFailed = true
	}
	// Switch to a new cursor ledger: write the state there first, then point the metadata at
	// it, then drop the old one.
	w, err := ml.f.lc.Create(ctx, ledger.CreateOptions{
		EnsembleSize: cfg.EnsembleSize, WriteQuorum: cfg.WriteQuorum, AckQuorum: cfg.AckQuorum,
		Digest: cfg.Digest, Password: cfg.Password,
		CustomMetadata: map[string]string{"application": "magnetar", "component": "managed-ledger-cursor", "managedLedger": ml.name, "cursor": c.name},
	})
	if err == nil {
		if _, err = w.Append(ctx, data); err != nil {
			_ = w.Close(ctx)
			ml.deleteLedgerQuietly(w.ID())
		}
	}
	if err != nil {
		// No cursor ledger: keep the state in the metadata snapshot instead.
		c.log.Warn("cursor ledger unavailable; persisting cursor state in the metadata store", "err", err)
		if werr := c.writeInfo(ctx, -1, data, md); werr != nil {
			return werr
		}
		c.dropLedger(ctx, nil, -1)
		return nil
	}
	if err := c.writeInfo(ctx, w.ID(), data, md); err != nil {
		_ = w.Close(ctx)
		ml.deleteLedgerQuietly(w.ID())
		return err
	}
	c.dropLedger(ctx, w, w.ID())
	c.p.ledgerEntries, c.p.ledgerCreated, c.p.ledgerFailed = 1, now, false
	return nil
}

// dropLedger makes w (id) the current cursor ledger, closing and deleting the previous one
// and the previous owner's (recovered) cursor ledger.
func (c *Cursor) dropLedger(ctx context.Context, w ledger.Writer, id int64) {
	old := c.p.ledger
	c.p.ledger, c.p.ledgerID = w, id
	if old != nil {
		_ = old.Close(ctx)
		c.ml.deleteLedgerQuietly(old.ID())
	}
	if r := c.p.recoveredLedgerID; r >= 0 && r != id {
		c.ml.deleteLedgerQuietly(r)
	}
	c.p.recoveredLedgerID = -1
}

// writeInfo CAS-writes the metadata snapshot. A lost CAS means a newer owner: fenced.
func (c *Cursor) writeInfo(ctx context.Context, ledgerID int64, data []byte, md Position) error {
	ml := c.ml
	info := &cursorInfo{CursorsLedgerID: ledgerID, MarkDelete: md, State: data, LastActive: ml.f.now().UnixMilli()}
	ver, err := ml.f.store.Put(ctx, ml.f.cursorKey(ml.name, c.name), encodeCursorInfo(info), c.p.version)
	if err != nil {
		if errors.Is(err, metadata.ErrBadVersion) {
			return c.fenced(err)
		}
		return fmt.Errorf("managedledger: %s: cursor %s: writing snapshot: %w", ml.name, c.name, err)
	}
	c.p.version = ver
	c.p.lastSnapshot = ml.f.now()
	return nil
}

// fenced stops the cursor's persistence for good: a newer owner has it. Caller holds pmu.
func (c *Cursor) fenced(cause error) error {
	c.stopTimers()
	c.p.fenceErr = fmt.Errorf("%w: %s: cursor %s: %w", ErrFenced, c.ml.name, c.name, cause)
	return c.p.fenceErr
}

func (c *Cursor) stopTimers() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.p.stopped = true
	if c.p.timer != nil {
		c.p.timer.Stop()
	}
}

// shutdown is the clean close of a durable cursor: the final state goes into the metadata
// snapshot and the cursor ledger is deleted.
func (c *Cursor) shutdown(ctx context.Context) error {
	if !c.durable {
		c.mu.Lock()
		c.closed = true
		c.updateActiveLocked()
		c.mu.Unlock()
		return nil
	}
	c.stopTimers()
	c.pmu.Lock()
	defer c.pmu.Unlock()
	c.mu.Lock()
	data, md := c.encodeLocked()
	c.closed = true
	c.updateActiveLocked()
	c.mu.Unlock()
	if err := c.writeInfo(ctx, -1, data, md); err != nil {
		return err
	}
	if c.p.ledger != nil {
		_ = c.p.ledger.Close(ctx)
		c.ml.deleteLedgerQuietly(c.p.ledger.ID())
		c.p.ledger = nil
	}
	if id := c.p.recoveredLedgerID; id >= 0 {
		c.ml.deleteLedgerQuietly(id)
		c.p.recoveredLedgerID = -1
	}
	return nil
}

// destroy deletes the cursor's ledger and metadata (DeleteCursor).
func (c *Cursor) destroy(ctx context.Context) error {
	c.stopTimers()
	c.pmu.Lock()
	defer c.pmu.Unlock()
	c.mu.Lock()
	c.closed = true
	c.updateActiveLocked()
	c.mu.Unlock()
	if c.p.ledger != nil {
		_ = c.p.ledger.Close(ctx)
		c.ml.deleteLedgerQuietly(c.p.ledger.ID())
		c.p.ledger = nil
	}
	if id := c.p.recoveredLedgerID; id >= 0 {
		c.ml.deleteLedgerQuietly(id)
	}
	err := c.ml.f.store.Delete(ctx, c.ml.f.cursorKey(c.ml.name, c.name), metadata.AnyVersion)
	if err != nil && !errors.Is(err, metadata.ErrNotFound) {
		return fmt.Errorf("managedledger: %s: deleting cursor %s: %w", c.ml.name, c.name, err)
	}
	return nil
}

// recoverCursors loads every durable cursor of the managed ledger.
func (ml *ManagedLedger) recoverCursors(ctx context.Context) error {
	prefix := ml.key + "/"
	kvs, err := ml.f.store.List(ctx, prefix)
	if err != nil {
		return fmt.Errorf("managedledger: %s: listing cursors: %w", ml.name, err)
	}
	for _, kv := range kvs {
		name, err := url.PathUnescape(kv.Key[len(prefix):])
		if err != nil {
			ml.log.Error("skipping cursor with a malformed key", "key", kv.Key)
			continue
		}
		c, err := ml.recoverAndClaimCursor(ctx, name, kv)
		if err != nil {
			return err
		}
		ml.mu.Lock()
		ml.cur.cursors[name] = c
		ml.mu.Unlock()
	}
	return nil
}

// recoverAndClaimCursor recovers a cursor and then claims its metadata key: the recovered
// state is written inline (CursorsLedgerID -1) by CAS on the version it was read at. A
// previous owner still running could otherwise switch to a new cursor ledger and CAS the key
// after our read, leaving us with a stale version and every later flush refused as fenced.
// If the claim loses, the key changed under us: read it again and recover again. After the
// claim the old cursor ledger (fenced by recovery, its state now in metadata) is deleted.
func (ml *ManagedLedger) recoverAndClaimCursor(ctx context.Context, name string, kv metadata.KV) (*Cursor, error) {
	for attempt := 0; ; attempt++ {
		c, err := ml.recoverCursor(ctx, name, kv)
		if err != nil {
			return nil, err
		}
		c.mu.Lock()
		data, md := c.encodeLocked()
		c.mu.Unlock()
		err = c.writeInfo(ctx, -1, data, md)
		if err == nil {
			if id := c.p.recoveredLedgerID; id >= 0 {
				ml.deleteLedgerQuietly(id)
			}
			c.p.ledgerID, c.statLedgerID, c.p.recoveredLedgerID = -1, -1, -1
			return c, nil
		}
		if !errors.Is(err, ErrFenced) || attempt == 2 {
			return nil, fmt.Errorf("managedledger: %s: claiming cursor %s: %w", ml.name, name, err)
		}
		if kv, err = ml.f.store.Get(ctx, kv.Key); err != nil {
			return nil, fmt.Errorf("managedledger: %s: re-reading cursor %s: %w", ml.name, name, err)
		}
	}
}

func (ml *ManagedLedger) recoverCursor(ctx context.Context, name string, kv metadata.KV) (*Cursor, error) {
	ci, err := decodeCursorInfo(kv.Value)
	if err != nil {
		return nil, fmt.Errorf("%s: cursor %s: %w", ml.name, name, err)
	}
	st := cursorState{MarkDelete: ci.MarkDelete, Acked: &RangeSet{}}
	if len(ci.State) > 0 {
		if st, err = decodeCursorState(ci.State); err != nil {
			return nil, fmt.Errorf("%s: cursor %s: %w", ml.name, name, err)
		}
	}
	if ci.CursorsLedgerID >= 0 {
		if ls, err := ml.readCursorLedger(ctx, ci.CursorsLedgerID); err != nil {
			ml.log.Warn("cursor ledger unreadable; using the older metadata snapshot (entries may be redelivered)",
				"cursor", name, "ledger", ci.CursorsLedgerID, "err", err)
		} else if ls != nil {
			st = *ls
		}
	}
	c := newCursor(ml, name, true, st.MarkDelete)
	c.p.version = kv.Version
	c.p.ledgerID, c.statLedgerID = ci.CursorsLedgerID, ci.CursorsLedgerID
	c.p.recoveredLedgerID = ci.CursorsLedgerID
	ml.mu.Lock()
	defer ml.mu.Unlock()
	// The log may have been trimmed past a stale snapshot; a mark-delete position before the
	// first ledger means "nothing of the stored log consumed".
	if first := ml.firstLocked(); c.markDelete.Less(first) {
		c.markDelete = first
	}
	c.acked = *st.Acked
	c.props = st.Props
	c.acked.RemoveThrough(c.markDelete)
	c.batchAcks = st.BatchAcks
	c.foldLocked()
	c.readPos = ml.nextLocked(c.markDelete)
	return c, nil
}

// readCursorLedger returns the state in the last entry of a cursor ledger (nil if it has
// none), opening it with recovery so that a previous owner can no longer append to it.
func (ml *ManagedLedger) readCursorLedger(ctx context.Context, id int64) (*cursorState, error) {
	r, err := ml.f.lc.Open(ctx, id, ledger.OpenOptions{Recovery: true, Password: ml.cfg.Password})
	if err != nil {
		return nil, err
	}
	defer r.Close()
	lac := r.LastAddConfirmed()
	if lac < 0 {
		return nil, nil
	}
	es, err := r.Read(ctx, lac, lac)
	if err != nil {
		return nil, err
	}
	if len(es) != 1 {
		return nil, fmt.Errorf("%w: cursor ledger %d: read of entry %d returned %d entries", ErrCorruptMetadata, id, lac, len(es))
	}
	st, err := decodeCursorState(es[0].Data)
	if err != nil {
		return nil, err
	}
	return &st, nil
}
