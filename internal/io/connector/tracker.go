package connector

import "sync"

// Tracker finds the checkpoint a source may commit: records are added in emit order with
// the position that is safe to resume from once they and all records before them are
// published; Done marks one published; Committable is the position of the longest
// published prefix. A CDC source acknowledges a slot's LSN or saves a binlog position only
// from Committable, so a crash never skips an unpublished change.
//
// Positions are opaque to the tracker. Records with no position of their own (a
// transaction's changes before its commit) pass nil: the prefix then stops at the last
// non-nil position within it.
type Tracker[P any] struct {
	mu      sync.Mutex
	next    uint64 // sequence of the next Add
	base    uint64 // sequence of ring[0]
	ring    []trackEntry[P]
	commit  P
	hasPos  bool
	pending int
}

type trackEntry[P any] struct {
	pos    P
	hasPos bool
	done   bool
}

// Add registers the next record; call the returned function when it is published.
func (t *Tracker[P]) Add(pos P, hasPos bool) (done func()) {
	t.mu.Lock()
	seq := t.next
	t.next++
	t.ring = append(t.ring, trackEntry[P]{pos: pos, hasPos: hasPos})
	t.pending++
	t.mu.Unlock()
	return func() { t.done(seq) }
}

// Mark records a position that needs no publish (a transaction's commit whose changes
// were all filtered out): it becomes committable once everything before it is.
func (t *Tracker[P]) Mark(pos P) {
	t.mu.Lock()
	if len(t.ring) == 0 {
		t.commit, t.hasPos = pos, true
		t.mu.Unlock()
		return
	}
	seq := t.next
	t.next++
	t.ring = append(t.ring, trackEntry[P]{pos: pos, hasPos: true})
	t.pending++
	t.mu.Unlock()
	t.done(seq)
}

func (t *Tracker[P]) done(seq uint64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	i := seq - t.base
	if i >= uint64(len(t.ring)) || t.ring[i].done {
		return
	}
	t.ring[i].done = true
	t.pending--
	n := 0
	for n < len(t.ring) && t.ring[n].done {
		if t.ring[n].hasPos {
			t.commit, t.hasPos = t.ring[n].pos, true
		}
		n++
	}
	if n > 0 {
		var zero trackEntry[P]
		for j := 0; j < n; j++ {
			t.ring[j] = zero
		}
		t.ring = t.ring[n:]
		t.base += uint64(n)
		if len(t.ring) == 0 {
			t.ring = nil // let the backing array go
		}
	}
}

// Committable returns the position of the longest published prefix (false: none yet).
func (t *Tracker[P]) Committable() (P, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.commit, t.hasPos
}

// Pending is how many added records are not yet published.
func (t *Tracker[P]) Pending() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.pending
}
