package managedledger

import "time"

// Active cursors (Pulsar's ManagedCursor.isActive / setActive / setInactive).
//
// The entry cache only pays off for cursors that will read soon: a subscription whose
// consumer has gone away, or one so far behind that the entries it needs left the cache long
// ago, never reads what the add path inserts now. Caching for such cursors filled the cache
// to its size bound with entries nobody read (workload W7: a 128 MiB backlog built for a
// subscription without consumers), and their read positions held read-position eviction
// back for everyone.
//
// So a cursor has two flags, both guarded by Cursor.mu:
//
//   - attached: the broker said a consumer is connected (SetActive when a subscription gains
//     its first consumer, SetInactive when the last one leaves). Non-durable cursors
//     (readers) are attached from creation until Close, as in Pulsar.
//   - backlogged: the cursor's read position is more than Config.CursorBackloggedThreshold
//     entries behind the end of the log. Re-evaluated when the cursor is attached, after
//     every cursor read of the log (evictConsumed walks the cursors anyway) and once a second
//     by the factory's background pass (checkBackloggedCursors), so a cursor whose consumer
//     stalled while the producer runs on is caught without any work on the add path.
//
// A cursor is *active* when it is attached and not backlogged; ManagedLedger.activeCursors
// counts them (Cursor.counted says whether this cursor is in the count). Then:
//
//   - the add path (ml_add.go:addDone, resetTailLocked) inserts into the cache only while
//     the log has an active cursor; without one the entries stay readable from the tail
//     (entries the bookies may not know to be confirmed) and the bookies;
//   - read-position eviction (cache_evict.go:evictConsumed) uses the slowest active
//     cursor. With no active cursor it uses the slowest attached (backlogged) cursor, which
//     then holds only what its own catch-up reads put in the cache (its read-ahead: adds are
//     not cached), and with no attached cursor either everything before the end may go.
//     Reads in flight hold the cache whatever the cursor's state.
//
// Correctness never depends on any of this: the cache only ever loses entries, and every
// entry is readable from the tail or the bookies.

// backloggedCheckInterval is how often the factory re-evaluates the backlogged flag of every
// attached cursor that has not read meanwhile. Reads re-evaluate it too, so this only bounds
// how long a stalled consumer's cursor keeps the add path caching for it.
const backloggedCheckInterval = time.Second

// SetActive marks the cursor as read by a connected consumer: while it is also not
// backlogged, adds are cached for it and its read position bounds read-position eviction.
// A no-op on a closed cursor.
func (c *Cursor) SetActive() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return
	}
	c.attached = true
	c.checkBackloggedLocked()
	c.updateActiveLocked()
}

// SetInactive marks the cursor as having no consumer: it no longer keeps entries in the
// cache. Its state and reads are unaffected.
func (c *Cursor) SetInactive() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.attached = false
	c.updateActiveLocked()
}

// IsActive reports whether the cursor is active for the entry cache: attached (SetActive,
// or a reader) and not backlogged.
func (c *Cursor) IsActive() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.counted
}

// hasActiveCursors reports whether some cursor of the log is active, i.e. whether an entry
// added now is likely to be read from the cache. Lock-free: the add path calls it under mu.
func (ml *ManagedLedger) hasActiveCursors() bool { return ml.cur.anyActive() }

// anyActive tells whether a cursor is attached and not backlogged.
func (cs *cursorSet) anyActive() bool { return cs.activeCursors.Load() > 0 }

// updateActiveLocked brings ml.cur.activeCursors in line with the cursor's flags. Caller holds
// c.mu; every change of attached, backlogged or closed is followed by a call.
func (c *Cursor) updateActiveLocked() {
	want := c.attached && !c.backlogged && !c.closed
	if want == c.counted {
		return
	}
	c.counted = want
	if want {
		c.ml.cur.activeCursors.Add(1)
	} else {
		c.ml.cur.activeCursors.Add(-1)
	}
}

// checkBackloggedLocked re-evaluates the backlogged flag from the number of stored entries
// from the read position to the end of the log. Caller holds c.mu; it takes ml.mu. Cost is
// O(ledgers between the read position and the end).
func (c *Cursor) checkBackloggedLocked() {
	c.ml.mu.Lock()
	c.backlogged = c.ml.isBackloggedLocked(c.readPos, c.markDelete)
	c.ml.mu.Unlock()
}

// isBackloggedLocked applies the threshold to a cursor with these positions. Caller holds
// ml.mu.
func (ml *ManagedLedger) isBackloggedLocked(readPos, markDelete Position) bool {
	threshold := ml.cfg.CursorBackloggedThreshold
	if threshold <= 0 {
		return false
	}
	from := ml.normalizeLocked(maxPos(readPos, ml.nextLocked(markDelete)))
	return ml.countLocked(prevPosition(from), ml.lastConfirmedLocked()) > threshold
}

// checkBackloggedCursors re-evaluates every attached cursor of the log (deactivating those
// that fell behind, reactivating those that caught up). The factory calls it periodically.
func (ml *ManagedLedger) checkBackloggedCursors() {
	ml.mu.Lock()
	if ml.state != stateOpen {
		ml.mu.Unlock()
		return
	}
	cursors := ml.cur.list(true)
	ml.mu.Unlock()
	for _, c := range cursors {
		c.mu.Lock()
		if c.attached && !c.closed {
			c.checkBackloggedLocked()
			c.updateActiveLocked()
		}
		c.mu.Unlock()
	}
}

// checkBackloggedCursors runs the check on every open managed ledger.
func (f *Factory) checkBackloggedCursors() {
	for _, ml := range f.openLedgers() {
		ml.checkBackloggedCursors()
	}
}

// cacheHold is what one cursor asks of read-position eviction (cache_evict.go).
type cacheHold struct {
	read         Position // the read position
	inFlightFrom Position // start of the oldest read in flight, if inFlight
	inFlight     bool
	active       bool // counted in activeCursors
	attached     bool
}

// cacheHold reports the cursor's hold on the cache, re-evaluating the backlogged flag of an
// attached cursor on the way (this runs after every cursor read of the log). A closed cursor
// holds nothing.
func (c *Cursor) cacheHold() (cacheHold, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return cacheHold{}, false
	}
	if c.attached {
		c.checkBackloggedLocked()
		c.updateActiveLocked()
	}
	return cacheHold{
		read:         c.readPos,
		inFlightFrom: c.inFlightFrom,
		inFlight:     c.readsInFlight > 0,
		active:       c.counted,
		attached:     c.attached,
	}, true
}
