package managedledger

// Eviction by read position. Size and age bounds alone keep every entry for about a second
// (managedLedgerCacheEvictionTimeThresholdMillis) even when every cursor of the topic has
// already read it, which at high rates is the bulk of the broker's heap. Like Pulsar's
// default (cacheEvictionByMarkDeletedPosition=false), entries before the slowest cursor's
// read position are dropped as soon as that cursor moves past them: a caught-up consumer
// never needs them again, and a rewind, redelivery or seek reads them from the bookies.

// ledgerList is the cached entries of one ledger, oldest insert first. Entries of a ledger
// are inserted in ascending entry order on the add path and by catch-up reads, so walking
// from the head and stopping at the first entry at or after a bound finds every entry below
// it in the common case; an out-of-order one left behind still goes by size or age.
type ledgerList struct {
	head, tail *cacheItem
	n          int
}

func (c *entryCache) linkLedgerLocked(it *cacheItem) {
	l := c.perLedger[it.pos.LedgerID]
	if l == nil {
		l = &ledgerList{}
		c.perLedger[it.pos.LedgerID] = l
	}
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
// them for entryID == maxEntryID), walking from the ledger's oldest insert.
func (c *entryCache) evictBefore(id, entryID int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	l := c.perLedger[id]
	for l != nil && l.head != nil && l.head.pos.EntryID < entryID {
		c.removeLocked(l.head)
		c.evictions++
		c.consumedEvictions++
		l = c.perLedger[id] // removing the last entry drops the list
	}
}

// maxEntryID as a bound evicts a whole ledger.
const maxEntryID = int64(^uint64(0) >> 1)

// evictConsumed drops the cached entries of this log that every cursor has read: those
// before the slowest cursor's read position (or before a read in flight, which collected
// positions but has not fetched them yet). Without cursors nobody reads the cache until a
// new subscription, which starts at the end or reads old entries from the bookies, so
// everything stored goes. Called after cursor reads; cost is O(cursors + entries dropped).
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
	n := len(ml.cursors) + len(ml.nonDurable)
	if n > 1 {
		many = make([]*Cursor, 0, n)
	}
	for _, c := range ml.cursors {
		if one = c; n > 1 {
			many = append(many, c)
		}
	}
	for c := range ml.nonDurable {
		if one = c; n > 1 {
			many = append(many, c)
		}
	}
	bound := ml.endLocked()
	ml.mu.Unlock()
	if n == 1 {
		if p, ok := one.evictionBound(); ok && p.Less(bound) {
			bound = p
		}
	}
	for _, c := range many {
		if p, ok := c.evictionBound(); ok && p.Less(bound) {
			bound = p
		}
	}
	ml.evictCacheBefore(bound, cur)
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

// evictionBound is the oldest position this cursor may still read from the cache: its read
// position, or the start of a read in flight. A closed cursor holds nothing.
func (c *Cursor) evictionBound() (Position, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return Position{}, false
	}
	p := c.readPos
	if c.readsInFlight > 0 && c.inFlightFrom.Less(p) {
		p = c.inFlightFrom
	}
	return p, true
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
