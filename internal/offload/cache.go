package offload

import (
	"container/list"
	"context"
	"errors"
	"sync"
)

// ChunkCache is a bounded LRU of decoded chunks shared by every offloaded-ledger reader of
// a process. It also makes concurrent reads of one chunk share one fetch. A size of 0
// caches nothing (concurrent fetches are still shared).
type ChunkCache struct {
	mu       sync.Mutex
	max      int64
	size     int64
	lru      *list.List // of *cacheEntry, most recent at the front
	items    map[chunkKey]*list.Element
	inflight map[chunkKey]*fetch

	hits, misses int64
}

type chunkKey struct {
	object string // data key (uuid and ledger) within its store
	store  string
	seq    int
}

type cacheEntry struct {
	key    chunkKey
	data   []byte
	frames []frame
}

type fetch struct {
	done   chan struct{}
	frames []frame
	err    error
}

// NewChunkCache returns a cache of at most maxBytes of chunk data.
func NewChunkCache(maxBytes int64) *ChunkCache {
	return &ChunkCache{max: max(0, maxBytes), lru: list.New(), items: map[chunkKey]*list.Element{}, inflight: map[chunkKey]*fetch{}}
}

// CacheStats are the cache's counters.
type CacheStats struct {
	Size, Max, Hits, Misses int64
	Chunks                  int
}

// Stats returns the counters.
func (c *ChunkCache) Stats() CacheStats {
	c.mu.Lock()
	defer c.mu.Unlock()
	return CacheStats{Size: c.size, Max: c.max, Hits: c.hits, Misses: c.misses, Chunks: len(c.items)}
}

// contains reports whether k is cached or being fetched.
func (c *ChunkCache) contains(k chunkKey) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, ok := c.items[k]
	_, f := c.inflight[k]
	return ok || f
}

// get returns the frames of k, calling load at most once at a time per key. The frames
// alias the chunk's buffer; callers copy what they keep.
func (c *ChunkCache) get(ctx context.Context, k chunkKey, load func() ([]byte, []frame, error)) ([]frame, error) {
	for {
		fr, again, err := c.getOnce(ctx, k, load)
		if !again {
			return fr, err
		}
	}
}

// getOnce is get; again says a shared fetch ended with its own caller's context, so this
// caller (whose context is live) must try again rather than inherit the cancellation.
func (c *ChunkCache) getOnce(ctx context.Context, k chunkKey, load func() ([]byte, []frame, error)) ([]frame, bool, error) {
	c.mu.Lock()
	if el, ok := c.items[k]; ok {
		c.lru.MoveToFront(el)
		c.hits++
		fr := el.Value.(*cacheEntry).frames
		c.mu.Unlock()
		return fr, false, nil
	}
	if f, ok := c.inflight[k]; ok {
		c.mu.Unlock()
		select {
		case <-f.done:
			if f.err != nil && ctx.Err() == nil && (errors.Is(f.err, context.Canceled) || errors.Is(f.err, context.DeadlineExceeded)) {
				return nil, true, nil
			}
			return f.frames, false, f.err
		case <-ctx.Done():
			return nil, false, ctx.Err()
		}
	}
	c.misses++
	f := &fetch{done: make(chan struct{})}
	c.inflight[k] = f
	c.mu.Unlock()

	data, frames, err := load()
	f.frames, f.err = frames, err
	c.mu.Lock()
	delete(c.inflight, k)
	if err == nil && int64(len(data)) <= c.max {
		c.items[k] = c.lru.PushFront(&cacheEntry{key: k, data: data, frames: frames})
		c.size += int64(len(data))
		for c.size > c.max {
			el := c.lru.Back()
			e := el.Value.(*cacheEntry)
			c.lru.Remove(el)
			delete(c.items, e.key)
			c.size -= int64(len(e.data))
		}
	}
	c.mu.Unlock()
	close(f.done)
	return frames, false, err
}

// drop removes every chunk of an object (after its ledger is deleted).
func (c *ChunkCache) drop(store, object string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for el := c.lru.Front(); el != nil; {
		next := el.Next()
		if e := el.Value.(*cacheEntry); e.key.store == store && e.key.object == object {
			c.lru.Remove(el)
			delete(c.items, e.key)
			c.size -= int64(len(e.data))
		}
		el = next
	}
}
