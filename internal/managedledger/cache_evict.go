package managedledger

// Eviction by read position. Size and age bounds alone keep every entry for about a second
// (managedLedgerCacheEvictionTimeThresholdMillis) even when every cursor of the topic has
// already read it, which at high rates is the bulk of the broker's heap. Like Pulsar's
// default (cacheEvictionByMarkDeletedPosition=false), entries before the slowest active
// cursor's read position are dropped as soon as that cursor moves past them: a caught-up
// consumer never needs them again, and a rewind, redelivery or seek reads them from the
// bookies. Which cursors are active (a consumer attached, not backlogged) is in
// cursor_active.go.

// ledgerList is the cached entries of one ledger, oldest insert first. Insertion order is
// not entry order: while a cursor is active the add path caches the newest entries, and a
// catch-up read then inserts older ones behind them. So eviction by position does not walk
// from the head (it stopped at the first new entry and left every later-read one to the
// size bound: a full 64 MiB cache in a catch-up drain), but uses low, below which no entry
// of the ledger is cached (see evictBefore).
type ledgerList struct {
	head, tail *cacheItem
	n          int
	low        int64
}

func (c *entryCache) linkLedgerLocked(it *cacheItem) {
	l := c.perLedger[it.pos.LedgerID]
	if l == nil {
		l = &ledgerList{low: it.pos.EntryID}
		c.perLedger[it.pos.LedgerID] = l
	}
	l.low = min(l.low, it.pos.EntryID)
	it.lprev = l.tail
	if l.tail != nil {
		l.tail.lnext = it
	} else {
		l.head = it
	}
	l.tail = it
	l.n++
}

func (c *entryCache) unlinkLedgerLocked(it *cacheItem) {
	l := c.perLedger[it.pos.LedgerID]
	if l == nil {
		return
	}
	if it.lprev != nil {
		it.lprev.lnext = it.lnext
	} else {
		l.head = it.lnext
	}
	if it.lnext != nil {
		it.lnext.lprev = it.lprev
	} else {
		l.tail = it.lprev
	}
	it.lprev, it.lnext = nil, nil
	if l.n--; l.n <= 0 {
		delete(c.perLedger, it.pos.LedgerID)
	}
}

// hasLedger reports whether any entry of ledger id is cached.
func (c *entryCache) hasLedger(id int64) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.perLedger[id] != nil
}

// evictBefore drops the cached entries of ledger id with entry ids below entryID (all of
// them for entryID == maxEntryID). It looks up the ids from the ledger's low bound to
// entryID, or walks the ledger's entries when they are fewer, so a call costs at most
// twice the entries it could find; as low then moves up to entryID, calls after every read
// cost about what the cursor moved.
func (c *entryCache) evictBefore(id, entryID int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	l := c.perLedger[id]
	if l == nil || entryID <= l.low {
		return
	}
	drop := func(it *cacheItem) {
		c.removeLocked(it)
		c.evictions++
		c.consumedEvictions++
	}
	if entryID-l.low <= 2*int64(l.n) {
		for e := l.low; e < entryID && c.perLedger[id] != nil; e++ {
			if it, ok := c.items[Position{id, e}]; ok {
				drop(it)
			}
		}
	} else {
		for it := l.head; it != nil; {
			next := it.lnext
			if it.pos.EntryID < entryID {
				drop(it)
			}
			it = next
		}
	}
	l.low = entryID // l may be gone (no entry left); then the next insert starts afresh
}

// maxEntryID as a bound evicts a whole ledger.
const maxEntryID = int64(^uint64(0) >> 1)

// evictConsumed drops the cached entries of this log that no active cursor will read from
// the cache: those before the slowest active cursor's read position (cursor_active.go), and
// never those at or after the start of a read in flight (it collected positions but has not
// fetched them yet). With no active cursor the slowest attached (backlogged) cursor bounds
// it, so its own catch-up read-ahead survives until it reads it; with neither, everything
// stored may go (a cursor attached later reads from the bookies and the tail). Called after
// cursor reads; cost is O(cursors + entries dropped), and it re-evaluates each attached
// cursor's backlogged flag on the way.
func (ml *ManagedLedger) evictConsumed() {
	if ml.f.cache.maxBytes <= 0 {
		return
	}
	ml.mu.Lock()
	if ml.state != stateOpen || len(ml.ledgers) == 0 {
		ml.mu.Unlock()
		return
	}
	cur := ml.ledgers[len(ml.ledgers)-1].LedgerID
	var one *Cursor
	var many []*Cursor
	n := len(ml.cur.cursors) + len(ml.cur.nonDurable)
	if n > 1 {
		many = make([]*Cursor, 0, n)
	}
	for _, c := range ml.cur.cursors {
		if one = c; n > 1 {
			many = append(many, c)
		}
	}
	for c := range ml.cur.nonDurable {
		if one = c; n > 1 {
			many = append(many, c)
		}
	}
	end := ml.endLocked()
	ml.mu.Unlock()
	b := evictionBounds{active: end, attached: end, inFlight: end}
	if n == 1 {
		b.add(one)
	}
	for _, c := range many {
		b.add(c)
	}
	ml.evictCacheBefore(b.bound(), cur)
}

// evictionBounds folds the cursors' holds on the cache into one bound.
type evictionBounds struct {
	active, attached, inFlight Position
	anyActive                  bool
}

func (b *evictionBounds) add(c *Cursor) {
	h, ok := c.cacheHold()
	if !ok {
		return
	}
	if h.inFlight && h.inFlightFrom.Less(b.inFlight) {
		b.inFlight = h.inFlightFrom
	}
	switch {
	case h.active:
		b.anyActive = true
		b.active = minPos(b.active, h.read)
	case h.attached:
		b.attached = minPos(b.attached, h.read)
	}
}

func (b *evictionBounds) bound() Position {
	p := b.attached
	if b.anyActive {
		p = b.active
	}
	return minPos(p, b.inFlight)
}

// evictCacheBefore drops cached entries of this log before p: those of p's ledger below p,
// and whole older ledgers, walking back from p's ledger while they have cached entries
// (older ones without any are already gone, bar a catch-up read's leftovers that age out).
func (ml *ManagedLedger) evictCacheBefore(p Position, cur int64) {
	cache := ml.f.cache
	if p.LedgerID > cur {
		p = Position{cur, maxEntryID}
	}
	cache.evictBefore(p.LedgerID, p.EntryID)
	ml.mu.Lock()
	var older []int64
	for k := ml.indexLocked(p.LedgerID) - 1; k >= 0; k-- {
		id := ml.ledgers[k].LedgerID
		if !cache.hasLedger(id) {
			break
		}
		older = append(older, id)
	}
	ml.mu.Unlock()
	for _, id := range older {
		cache.evictBefore(id, maxEntryID)
	}
}

// beginReadLocked records a read from p in flight. Caller holds c.mu.
func (c *Cursor) beginReadLocked(p Position) {
	if c.readsInFlight == 0 || p.Less(c.inFlightFrom) {
		c.inFlightFrom = p
	}
	c.readsInFlight++
}

// endRead ends a read begun by beginReadLocked (after the read position settled) and
// drops what every cursor of the log has read.
func (c *Cursor) endRead() {
	c.mu.Lock()
	c.readsInFlight--
	c.mu.Unlock()
	c.ml.evictConsumed()
}
