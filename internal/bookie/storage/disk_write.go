package storage

import (
	"bytes"
	"fmt"
	"sync"

	"github.com/magnetar-io/magnetar/internal/bookie/storage/index"
	"github.com/magnetar-io/magnetar/internal/bookie/storage/journal"
)

// entryKey names an entry in the caches.
type entryKey struct{ ledger, entry int64 }

// admit runs under the journal writer's lock, in journal order, for every record about to
// be queued. Checking and ordering in one step is what makes fencing exact: an add queued
// before the fence record is acknowledged before Fence returns, and every add after it is
// rejected, so no add is acknowledged once Fence has returned (invariant 3).
func (d *Disk) admit(r journal.Record) error {
	d.lmu.Lock()
	defer d.lmu.Unlock()
	st := d.ledgers[r.LedgerID]
	if st == nil {
		st = &ledgerState{masterKey: bytes.Clone(r.MasterKey), lac: -1}
		d.ledgers[r.LedgerID] = st
		d.dirty[r.LedgerID] = st
	} else {
		if st.deleted {
			return fmt.Errorf("%w: ledger %d was deleted", ErrFenced, r.LedgerID)
		}
		if !bytes.Equal(st.masterKey, r.MasterKey) {
			return ErrUnauthorized
		}
	}
	if r.Kind == journal.KindFence {
		// Set at queue time, before it is durable: if the write fails the ledger stays
		// fenced in memory, which only errs on the safe side.
		if !st.fenced {
			st.fenced = true
			d.dirty[r.LedgerID] = st
		}
		return nil
	}
	if st.fenced && !r.Recovery {
		return ErrFenced
	}
	return nil
}

// apply runs on the journal's acker goroutine after the records are durable (and during
// replay): it puts added entries into the write cache, advances LACs and records the
// journal position the write cache now covers. It blocks while the write cache is full;
// that is the backpressure that reaches AddEntry through the journal queue.
func (d *Disk) apply(recs []journal.Record, end journal.Pos) {
	c := &d.cache
	c.mu.Lock()
	for i := range recs {
		r := &recs[i]
		d.lmu.Lock()
		st := d.ledgers[r.LedgerID]
		if st == nil { // replay of a ledger the index does not know yet
			st = &ledgerState{masterKey: bytes.Clone(r.MasterKey), lac: -1}
			d.ledgers[r.LedgerID] = st
			d.dirty[r.LedgerID] = st
		}
		deleted := st.deleted
		if r.Kind == journal.KindFence && !st.fenced {
			st.fenced = true
			d.dirty[r.LedgerID] = st
		}
		d.lmu.Unlock()
		if deleted || r.Kind != journal.KindAdd {
			continue
		}
		p := c.reserve(len(r.Payload))
		if p == nil {
			// Closing while the cache is full: the entry stays in the journal, and this
			// generation must not move the checkpoint past it.
			c.active.noCheckpoint = true
			continue
		}
		copy(p, r.Payload)
		c.active.entries[entryKey{r.LedgerID, r.EntryID}] = p
		d.lmu.Lock()
		if r.LAC > st.lac {
			st.lac = r.LAC
			d.dirty[r.LedgerID] = st
			if st.lacCh != nil {
				close(st.lacCh)
				st.lacCh = nil
			}
		}
		d.lmu.Unlock()
	}
	c.active.ckpt = end
	c.active.hasCkpt = true
	half := c.active.bytes >= c.max/2
	c.mu.Unlock()
	if half {
		d.kickFlush()
	}
}

// chunkSize is the write cache's allocation unit: entries are copied into 1 MiB arenas, so
// the cache costs one allocation per MiB rather than one per entry, and its memory is
// exactly the sum of its chunks.
const chunkSize = 1 << 20

// entryOverhead is what one cached entry costs beyond its payload (its map slot and slice
// header), counted against the write cache's bound so that many tiny entries cannot
// take more memory than the configured size.
const entryOverhead = 96

// cacheGen is one half of the write cache: the one taking entries (active) or the one
// being written out (flushing).
type cacheGen struct {
	entries      map[entryKey][]byte
	chunks       [][]byte
	cur          []byte // the chunk being filled
	bytes        int64  // sum of chunk capacities and per-entry overhead
	overhead     int64  // entries x entryOverhead
	ckpt         journal.Pos
	hasCkpt      bool
	noCheckpoint bool
	meta         map[int64]index.LedgerMeta // ledgers changed before the swap
}

// writeCache holds acknowledged entries until a flush has written them to the entry log
// and the index. The chunks of its generations are bounded by max: reserve waits for a
// flush to free a generation.
type writeCache struct {
	mu       sync.RWMutex // readers share it; apply, swap and release take it exclusively
	cond     *sync.Cond
	active   *cacheGen
	flushing *cacheGen
	used     int64
	max      int64
	// free recycles flushed chunks. A sync.Pool rather than a list, so that chunks idle
	// since a burst go back to the heap: a list kept up to max resident after the load
	// fell (16 MiB of a standalone's heap during a catch-up drain).
	free   sync.Pool
	closed bool
	kick   func()
	m      *metrics
}

func (c *writeCache) init(max int64, kick func(), m *metrics) {
	c.cond = sync.NewCond(&c.mu)
	c.max, c.kick, c.m = max, kick, m
	c.active = newGen(journal.Pos{})
}

func newGen(ckpt journal.Pos) *cacheGen {
	return &cacheGen{entries: map[entryKey][]byte{}, ckpt: ckpt}
}

// reserve returns n bytes of cache memory in the active generation, waiting for a flush
// when the cache is full. It returns nil when the cache is closed. Caller holds c.mu.
func (c *writeCache) reserve(n int) []byte {
	for {
		g := c.active
		room := g.cur != nil && len(g.cur)+n <= cap(g.cur)
		if room && c.used+entryOverhead <= c.max {
			l := len(g.cur)
			g.cur = g.cur[:l+n]
			c.used += entryOverhead
			g.overhead += entryOverhead
			g.bytes += entryOverhead
			return g.cur[l : l+n : l+n]
		}
		size := int64(max(chunkSize, n))
		if !room && c.used+size <= c.max {
			chunk := c.newChunk(size)
			c.used += size
			g.chunks = append(g.chunks, chunk)
			g.cur = chunk
			g.bytes += size
			c.m.writeCache.Set(float64(c.used))
			continue
		}
		if c.closed {
			return nil
		}
		c.kick()
		c.cond.Wait()
	}
}

// newChunk takes a recycled chunk when size is the usual one.
func (c *writeCache) newChunk(size int64) []byte {
	if size == chunkSize {
		if p, ok := c.free.Get().(*[]byte); ok {
			return (*p)[:0]
		}
	}
	return make([]byte, 0, size)
}

// get returns a copy of a cached entry.
func (c *writeCache) get(k entryKey) ([]byte, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if p, ok := c.active.entries[k]; ok {
		return bytes.Clone(p), true
	}
	if c.flushing != nil {
		if p, ok := c.flushing.entries[k]; ok {
			return bytes.Clone(p), true
		}
	}
	return nil, false
}

// release frees a flushed generation's memory. Caller holds c.mu.
func (c *writeCache) release(g *cacheGen) {
	for _, ch := range g.chunks {
		c.used -= int64(cap(ch))
		if cap(ch) == chunkSize {
			c.free.Put(&ch)
		}
	}
	c.used -= g.overhead
	c.m.writeCache.Set(float64(c.used))
	g.chunks, g.cur, g.entries = nil, nil, nil
	c.cond.Broadcast()
}

func (c *writeCache) close() {
	c.mu.Lock()
	c.closed = true
	c.cond.Broadcast()
	c.mu.Unlock()
}
