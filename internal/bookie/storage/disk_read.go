package storage

import (
	"container/list"
	"fmt"
	"sync"
	"time"

	"github.com/magnetar-io/magnetar/internal/bookie/storage/entrylog"
	"github.com/magnetar-io/magnetar/internal/bookie/storage/index"
)

// readAheadMaxSpan bounds one read-ahead pread.
const readAheadMaxSpan = 4 << 20

// ReadEntry implements Storage: write cache, then read cache, then index + entry log.
// Any failure past "the index has no location" is ErrCorrupt, never ErrNoSuchEntry. The
// payload is the caller's: write-cache hits are copied, read-cache hits are handed over
// (see readCache.take), and entry-log reads are fresh.
func (d *Disk) ReadEntry(ledgerID, entryID int64) ([]byte, error) {
	start := time.Now()
	defer func() { d.m.readLatency.Observe(time.Since(start).Seconds()) }()
	return d.readEntry(ledgerID, entryID)
}

// Unread implements Unreader. Entries never change once written, so the payload is the
// entry's whatever cache it came from.
func (d *Disk) Unread(ledgerID, entryID int64, payload []byte) {
	if d.rcache.max > 0 {
		d.rcache.put(entryKey{ledgerID, entryID}, payload)
	}
}

func (d *Disk) readEntry(ledgerID, entryID int64) ([]byte, error) {
	if d.closed.Load() {
		return nil, ErrClosed
	}
	d.lmu.RLock()
	st := d.ledgers[ledgerID]
	known := st != nil && !st.deleted
	d.lmu.RUnlock()
	if !known {
		return nil, ErrNoSuchLedger
	}
	k := entryKey{ledgerID, entryID}
	if p, ok := d.cache.get(k); ok {
		return p, nil
	}
	if p, ok := d.rcache.take(k); ok {
		d.m.readCacheHits.Inc()
		return p, nil
	}
	d.m.readCacheMiss.Inc()

	d.logsMu.RLock()
	defer d.logsMu.RUnlock()
	if d.closed.Load() { // Close closes the index under logsMu
		return nil, ErrClosed
	}
	loc, found, err := d.ix.Get(ledgerID, entryID)
	if err != nil {
		return nil, fmt.Errorf("%w: (%d,%d): %w", ErrCorrupt, ledgerID, entryID, err)
	}
	if !found {
		// A flush commits the index before it frees the write-cache generation, so an
		// entry that left the cache before our look-up is in the index by now. Look in the
		// cache once more for one that arrived meanwhile.
		if p, ok := d.cache.get(k); ok {
			return p, nil
		}
		return nil, d.missing(ledgerID, entryID)
	}
	lg := d.logs[loc.Log]
	if lg == nil {
		return nil, fmt.Errorf("%w: (%d,%d): entry log %d is missing", ErrCorrupt, ledgerID, entryID, loc.Log)
	}
	p, err := lg.Read(ledgerID, entryID, int64(loc.Offset), int(loc.Size))
	if err != nil {
		d.log.Error("entry unreadable", "ledger", ledgerID, "entry", entryID, "err", err)
		return nil, fmt.Errorf("%w: (%d,%d): %w", ErrCorrupt, ledgerID, entryID, err)
	}
	if d.cfg.ReadAheadCacheBatchSize > 0 && d.rcache.max > 0 {
		d.readAhead(ledgerID, entryID, loc, lg)
	}
	return p, nil
}

// readAhead loads the entries after entryID of the same ledger that follow it in the same
// entry log into the read cache with one pread. Flushes sort by ledger, so a catch-up
// reader's next entries are usually adjacent. Caller holds logsMu shared.
func (d *Disk) readAhead(ledgerID, entryID int64, loc index.Location, lg *entrylog.Log) {
	type want struct {
		entry int64
		loc   index.Location
	}
	var ws []want
	next := int64(loc.Offset) + int64(loc.Size)
	spanStart := next
	_ = d.ix.Range(ledgerID, entryID+1, entryID+int64(d.cfg.ReadAheadCacheBatchSize), func(e int64, l index.Location) bool {
		if l.Log != loc.Log || int64(l.Offset) != next || next+int64(l.Size)-spanStart > readAheadMaxSpan {
			return false
		}
		ws = append(ws, want{e, l})
		next += int64(l.Size)
		return true
	})
	if len(ws) == 0 {
		return
	}
	span, err := lg.ReadSpan(spanStart, int(next-spanStart))
	if err != nil {
		return // the reader will get the error on its own read
	}
	for _, w := range ws {
		off := int64(w.loc.Offset) - spanStart
		rec, _, err := entrylog.DecodeRecord(span[off : off+int64(w.loc.Size)])
		if err != nil || rec.LedgerID != ledgerID || rec.EntryID != w.entry {
			return // a corrupt record is reported when it is read, not cached
		}
		// The payloads alias the span (no copy): it stays alive while any of them is cached
		// or held by a reader. Sub-slices are capped, so no holder can write into another's.
		d.rcache.put(entryKey{ledgerID, w.entry}, rec.Payload[:len(rec.Payload):len(rec.Payload)])
	}
}

// readCache is a bounded LRU of entry payloads filled by read-ahead. It is a prefetch
// buffer, not a cache of what was read: a hit hands the payload to the reader and forgets
// it (take). Re-reads are served above the bookie (the managed ledger's entry cache), and
// a sequential reader never asks twice, so keeping read entries only held read-ahead spans
// alive: in a catch-up drain the cache sat at its bound (16 MiB in a standalone) while
// what was still unread was one or two spans.
type readCache struct {
	mu   sync.Mutex
	max  int64
	used int64
	m    map[entryKey]*list.Element
	lru  list.List // front = most recent; values are *rcEntry
	met  *metrics
}

type rcEntry struct {
	k entryKey
	p []byte
}

func newReadCache(max int64, m *metrics) *readCache {
	return &readCache{max: max, m: map[entryKey]*list.Element{}, met: m}
}

// take removes the entry and returns its payload, which is the caller's from then on.
func (c *readCache) take(k entryKey) ([]byte, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.m[k]
	if !ok {
		return nil, false
	}
	p := el.Value.(*rcEntry).p
	c.remove(el)
	c.met.readCache.Set(float64(c.used))
	return p, true
}

// put caches p, which the caller hands over (not copied).
func (c *readCache) put(k entryKey, p []byte) {
	n := int64(len(p)) + 64
	if n > c.max/4 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.m[k]; ok {
		c.remove(el)
	}
	c.m[k] = c.lru.PushFront(&rcEntry{k, p})
	c.used += n
	for c.used > c.max {
		c.remove(c.lru.Back())
	}
	c.met.readCache.Set(float64(c.used))
}

func (c *readCache) remove(el *list.Element) {
	e := el.Value.(*rcEntry)
	c.lru.Remove(el)
	delete(c.m, e.k)
	c.used -= int64(len(e.p)) + 64
}

// invalidate drops cached copies of entries that were just rewritten.
func (c *readCache) invalidate(entries map[entryKey][]byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.m) == 0 {
		return
	}
	for k := range entries {
		if el, ok := c.m[k]; ok {
			c.remove(el)
		}
	}
	c.met.readCache.Set(float64(c.used))
}
