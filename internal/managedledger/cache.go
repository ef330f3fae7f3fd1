package managedledger

import (
	"sync"
	"time"
)

// entryCache is the broker-wide entry cache shared by every managed ledger of a Factory.
// Entries go in after a successful add (so caught-up cursors never touch bookies) and after
// catch-up reads (read-ahead). It is bounded by size: an insert that pushes it over maxBytes
// evicts the oldest entries down to the watermark at once; a periodic pass also evicts entries
// older than the age threshold, because a tail read that has not happened within about a
// second will not come from the cache anyway.
//
// Keys are positions: ledger ids are unique across the ledger client, so one map serves all
// topics. Eviction order is insertion order (a FIFO list), which for a log is also age order.
type entryCache struct {
	mu        sync.Mutex
	maxBytes  int64
	watermark int64
	maxAge    time.Duration
	now       func() time.Time

	size      int64
	head      *cacheItem // oldest; items form an intrusive list (one allocation per entry)
	tail      *cacheItem // newest
	items     map[Position]*cacheItem
	perLedger map[int64]*ledgerList // cached entries per ledger, in insertion order (see cache_evict.go)

	hits, misses, evictions int64
	consumedEvictions       int64 // entries dropped because every cursor read them
}

type cacheItem struct {
	pos        Position
	data       []byte
	meta       EntryMeta
	inserted   time.Time
	prev, next *cacheItem
	// lprev/lnext link the entries of one ledger (ledgerList), so eviction by read position
	// touches only the entries it drops.
	lprev, lnext *cacheItem
}

func newEntryCache(maxBytes int64, watermark float64, maxAge time.Duration, now func() time.Time) *entryCache {
	return &entryCache{
		maxBytes:  maxBytes,
		watermark: int64(float64(maxBytes) * watermark),
		maxAge:    maxAge,
		now:       now,
		items:     map[Position]*cacheItem{},
		perLedger: map[int64]*ledgerList{},
	}
}

// insert adds data at p unless the cache is disabled or the entry alone exceeds it.
func (c *entryCache) insert(p Position, data []byte, meta EntryMeta) {
	sz := int64(len(data))
	if c.maxBytes <= 0 || sz > c.maxBytes {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.items[p]; ok {
		return
	}
	it := &cacheItem{pos: p, data: data, meta: meta, inserted: c.now(), prev: c.tail}
	if c.tail != nil {
		c.tail.next = it
	} else {
		c.head = it
	}
	c.tail = it
	c.items[p] = it
	c.linkLedgerLocked(it)
	c.size += sz
	if c.size > c.maxBytes {
		c.evictLocked(c.watermark, time.Time{})
	}
}

// get returns the cached entry at p.
func (c *entryCache) get(p Position) (Entry, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if it, ok := c.items[p]; ok {
		c.hits++
		return Entry{Position: p, Data: it.data, Meta: it.meta}, true
	}
	c.misses++
	return Entry{}, false
}

// evictLocked drops the oldest entries while the size is above target or while they were
// inserted before cutoff (zero: no age limit).
func (c *entryCache) evictLocked(target int64, cutoff time.Time) {
	for it := c.head; it != nil; it = c.head {
		if c.size <= target && (cutoff.IsZero() || !it.inserted.Before(cutoff)) {
			return
		}
		c.removeLocked(it)
		c.evictions++
	}
}

func (c *entryCache) removeLocked(it *cacheItem) {
	if it.prev != nil {
		it.prev.next = it.next
	} else {
		c.head = it.next
	}
	if it.next != nil {
		it.next.prev = it.prev
	} else {
		c.tail = it.prev
	}
	it.prev, it.next = nil, nil
	delete(c.items, it.pos)
	c.unlinkLedgerLocked(it)
	c.size -= int64(len(it.data))
}

// evictByAge is the periodic pass.
func (c *entryCache) evictByAge() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.evictLocked(c.maxBytes, c.now().Add(-c.maxAge))
}

// invalidateLedger drops every entry of a ledger (deleted or trimmed), walking only that
// ledger's entries.
func (c *entryCache) invalidateLedger(ledgerID int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	l := c.perLedger[ledgerID]
	for l != nil && l.head != nil {
		c.removeLocked(l.head)
	}
}

// CacheStats describes the shared entry cache.
type CacheStats struct {
	SizeBytes, MaxBytes int64
	Entries             int
	Hits, Misses        int64
	Evictions           int64
	// ConsumedEvictions is the part of Evictions dropped by read position (cache_evict.go).
	ConsumedEvictions int64
}

func (c *entryCache) stats() CacheStats {
	c.mu.Lock()
	defer c.mu.Unlock()
	return CacheStats{SizeBytes: c.size, MaxBytes: c.maxBytes, Entries: len(c.items), Hits: c.hits, Misses: c.misses, Evictions: c.evictions, ConsumedEvictions: c.consumedEvictions}
}
