package broker

import (
	"context"
	"errors"
	"sort"
	"sync"
	"time"
)

// memStorage is an in-memory logStorage twin for unit tests of the broker's dispatch
// logic, independent of the managed ledger. One ledger (id 1) per log.
type memStorage struct {
	mu   sync.Mutex
	logs map[string]*memLog
}

func newMemStorage() *memStorage { return &memStorage{logs: map[string]*memLog{}} }

func (s *memStorage) open(_ context.Context, name string) (topicLog, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	l, ok := s.logs[name]
	if !ok {
		l = &memLog{cursors: map[string]*memCursor{}, notify: make(chan struct{})}
		s.logs[name] = l
	}
	return l, nil
}

type memLog struct {
	mu      sync.Mutex
	entries [][]byte
	cursors map[string]*memCursor
	notify  chan struct{}
	cbs     sync.Mutex // keeps append callbacks in order
}

func (l *memLog) append(data []byte, done func(position, error)) error {
	l.cbs.Lock()
	l.mu.Lock()
	p := position{1, int64(len(l.entries))}
	l.entries = append(l.entries, data)
	close(l.notify)
	l.notify = make(chan struct{})
	l.mu.Unlock()
	go func() {
		defer l.cbs.Unlock()
		done(p, nil)
	}()
	return nil
}

func (l *memLog) lastConfirmed() position {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.entries) == 0 {
		return position{-1, -1}
	}
	return position{1, int64(len(l.entries) - 1)}
}

func (l *memLog) newCursor(md int64) *memCursor {
	return &memCursor{l: l, md: md, rd: md + 1, acked: map[int64]bool{}}
}

func (l *memLog) openCursor(_ context.Context, name string, initialEarliest bool) (logCursor, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if c, ok := l.cursors[name]; ok {
		return c, nil
	}
	md := int64(len(l.entries)) - 1
	if initialEarliest {
		md = -1
	}
	c := l.newCursor(md)
	l.cursors[name] = c
	return c, nil
}

func (l *memLog) newReader(_ context.Context, start position) (logCursor, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := int64(len(l.entries))
	switch {
	case start == earliest:
		return l.newCursor(-1), nil
	case start == latest:
		return l.newCursor(n - 1), nil
	}
	return l.newCursor(min(start.entry, n) - 1), nil
}

func (l *memLog) deleteCursor(_ context.Context, name string) error {
	l.mu.Lock()
	delete(l.cursors, name)
	l.mu.Unlock()
	return nil
}

func (l *memLog) readAt(_ context.Context, p position) (logEntry, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if p.ledger != 1 || p.entry < 0 || p.entry >= int64(len(l.entries)) {
		return logEntry{}, errors.New("memlog: no such entry")
	}
	return logEntry{pos: p, data: l.entries[p.entry]}, nil
}

func (l *memLog) close(context.Context) error   { return nil }
func (l *memLog) destroy(context.Context) error { return nil }
func (l *memLog) terminated() bool              { return false }
func (l *memLog) cursorNames() ([]string, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for n := range l.cursors {
		out = append(out, n)
	}
	return out, nil
}
func (l *memLog) terminate(context.Context) (position, error) {
	return l.lastConfirmed(), errors.New("memlog: terminate not supported")
}
func (l *memLog) storageSize() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, e := range l.entries {
		n += len(e)
	}
	return int64(n)
}

type memCursor struct {
	l     *memLog
	md    int64 // guarded by l.mu, as are rd and acked
	rd    int64
	acked map[int64]bool
	batch map[int64][]uint64 // partly acknowledged batches
	reads int64              // entries returned by read, guarded by l.mu
}

func (c *memCursor) read(ctx context.Context, max int) ([]logEntry, error) {
	for {
		c.l.mu.Lock()
		var out []logEntry
		for c.rd < int64(len(c.l.entries)) && len(out) < max {
			if !c.acked[c.rd] {
				out = append(out, logEntry{pos: position{1, c.rd}, data: c.l.entries[c.rd]})
			}
			c.rd++
		}
		c.reads += int64(len(out))
		ch := c.l.notify
		c.l.mu.Unlock()
		if len(out) > 0 {
			return out, nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

func (c *memCursor) readPositions(_ context.Context, ps []position) ([]logEntry, error) {
	c.l.mu.Lock()
	defer c.l.mu.Unlock()
	var out []logEntry
	for _, p := range ps {
		if p.entry > c.md && !c.acked[p.entry] && p.entry < int64(len(c.l.entries)) {
			out = append(out, logEntry{pos: p, data: c.l.entries[p.entry]})
		}
	}
	return out, nil
}

func (c *memCursor) seek(p position) {
	c.l.mu.Lock()
	c.rd = max(p.entry, c.md+1)
	c.l.mu.Unlock()
}

func (c *memCursor) rewind() {
	c.l.mu.Lock()
	c.rd = c.md + 1
	c.l.mu.Unlock()
}

func (c *memCursor) foldLocked() {
	for c.acked[c.md+1] {
		delete(c.acked, c.md+1)
		c.md++
	}
}

func (c *memCursor) markDelete(_ context.Context, p position) error {
	c.l.mu.Lock()
	defer c.l.mu.Unlock()
	if p.entry > c.md {
		c.md = p.entry
		for e := range c.acked {
			if e <= c.md {
				delete(c.acked, e)
			}
		}
		c.foldLocked()
	}
	return nil
}

func (c *memCursor) delete(_ context.Context, ps []position) error {
	c.l.mu.Lock()
	defer c.l.mu.Unlock()
	for _, p := range ps {
		if p.entry > c.md {
			c.acked[p.entry] = true
		}
	}
	c.foldLocked()
	return nil
}

func (c *memCursor) isAcked(p position) bool {
	c.l.mu.Lock()
	defer c.l.mu.Unlock()
	return p.entry <= c.md || c.acked[p.entry]
}

func (c *memCursor) markDeletePosition() position {
	c.l.mu.Lock()
	defer c.l.mu.Unlock()
	return position{1, c.md}
}

func (c *memCursor) resetTo(_ context.Context, p position) error {
	c.l.mu.Lock()
	defer c.l.mu.Unlock()
	c.md = p.entry - 1
	c.rd = p.entry
	clear(c.acked)
	return nil
}

func (c *memCursor) resetToTime(ctx context.Context, t time.Time) error {
	c.l.mu.Lock()
	i := sort.Search(len(c.l.entries), func(i int) bool {
		pt, err := entryPublishTime(c.l.entries[i])
		return err == nil && !pt.Before(t)
	})
	c.l.mu.Unlock()
	return c.resetTo(ctx, position{1, int64(i)})
}

func (c *memCursor) close() {}

func (c *memCursor) backlog() int64 {
	c.l.mu.Lock()
	defer c.l.mu.Unlock()
	return int64(len(c.l.entries)) - 1 - c.md - int64(len(c.acked))
}

func (c *memCursor) ackBatch(p position, remaining []uint64) (bool, error) {
	c.l.mu.Lock()
	defer c.l.mu.Unlock()
	if p.entry <= c.md || c.acked[p.entry] {
		return true, nil
	}
	bits := append([]uint64(nil), remaining...)
	if old, ok := c.batch[p.entry]; ok {
		for i := range bits {
			if i < len(old) {
				bits[i] &= old[i]
			} else {
				bits[i] = 0
			}
		}
	}
	for _, w := range bits {
		if w != 0 {
			if c.batch == nil {
				c.batch = map[int64][]uint64{}
			}
			c.batch[p.entry] = bits
			return false, nil
		}
	}
	delete(c.batch, p.entry)
	c.acked[p.entry] = true
	c.foldLocked()
	return true, nil
}

func (c *memCursor) batchAckSet(p position) []uint64 {
	c.l.mu.Lock()
	defer c.l.mu.Unlock()
	if p.entry <= c.md || c.acked[p.entry] {
		return nil
	}
	return append([]uint64(nil), c.batch[p.entry]...)
}
