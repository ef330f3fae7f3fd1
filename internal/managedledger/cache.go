package managedledger

import (
	"container/list"
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

	size  int64
	order *list.List // of *cacheItem, oldest at the front
	items map[Position]*list.Element

	hits, misses, evictions int64
}

type cacheItem struct {
	pos      Position
	data     []byte
	inserted time.Time
}

func newEntryCache(maxBytes int64, watermark float64, maxAge time.Duration, now func() time.Time) *entryCache {
	return &entryCache{
		maxBytes:  maxBytes,
		watermark: int64(float64(maxBytes) * watermark),
		maxAge:    maxAge,
		now:       now,
		order:     list.New(),
		items:     map[Position]*list.Element{},
	}
}

// insert adds data at p unless the cache is disabled or the entry alone exceeds it.
func (c *entryCache) insert(p Position, data []byte) {
	sz := int64(len(data))
	if c.maxBytes <= 0 || sz > c.maxBytes {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.items[p]; ok {
		return
	}
	c.items[p] = c.order.PushBack(&cacheItem{pos: p, data: data, inserted: c.now()})
	c.size += sz
	if c.size > c.maxBytes {
		c.evictLocked(c.watermark, time.Time{})
	}
}

// get returns the cached data at p.
func (c *entryCache) get(p Position) ([]byte, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.items[p]; ok {
		c.hits++
		return e.Value.(*cacheItem).data, true
	}
	c.misses++
	return nil, false
}

// evictLocked drops the oldest entries while the size is above target or while they were
// inserted before cutoff (zero: no age limit).
func (c *entryCache) evictLocked(target int64, cutoff time.Time) {
	for e := c.order.Front(); e != nil; e = c.order.Front() {
		it := e.Value.(*cacheItem)
		if c.size <= target && (cutoff.IsZero() || !it.inserted.Before(cutoff)) {
			return
		}
		c.removeLocked(e)
		c.evictions++
	}
}

func (c *entryCache) removeLocked(e *list.Element) {
	it := c.order.Remove(e).(*cacheItem)
	delete(c.items, it.pos)
	c.size -= int64(len(it.data))
}

// evictByAge is the periodic pass.
func (c *entryCache) evictByAge() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.evictLocked(c.maxBytes, c.now().Add(-c.maxAge))
}

// invalidateLedger drops every entry of a ledger (deleted or trimmed). It walks the whole
// cache, which is fine at the rate ledgers are trimmed.
func (c *entryCache) invalidateLedger(ledgerID int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for e := c.order.Front(); e != nil; {
		next := e.Next()
		if e.Value.(*cacheItem).pos.LedgerID == ledgerID {
			c.removeLocked(e)
		}
		e = next
	}
}

// CacheStats describes the shared entry cache.
type CacheStats struct {
	SizeBytes, MaxBytes int64
	Entries             int
	Hits, Misses        int64
	Evictions           int64
}

func (c *entryCache) stats() CacheStats {
	c.mu.Lock()
	defer c.mu.Unlock()
	return CacheStats{SizeBytes: c.size, MaxBytes: c.maxBytes, Entries: len(c.items), Hits: c.hits, Misses: c.misses, Evictions: c.evictions}
}
