package topics

import (
	"container/heap"
	"context"
	"time"
)

// Delayed delivery (delayedDeliveryEnabled). A message whose metadata has deliver_at_time
// (the client's DeliverAt/DeliverAfter) is, on a Shared or Key_Shared subscription, not
// dispatched when the cursor reads past it: its position goes into the subscription's
// tracker, a min-heap by due time. Each dispatch round first hands out the entries that are
// due (read again by position), then reads new ones; a read waiting at the tail has a
// deadline at the next due tick, so a quiet topic still delivers on time. Exclusive and
// Failover deliver at once, as Pulsar does.
//
// Nothing about delayed messages is persisted: they are unacknowledged entries after the
// mark-delete position, so after a restart (or any rewind) the cursor reads them again and
// they are tracked again. The tracker is bounded (delayedDeliveryMaxTrackedMessages): when
// full, the subscription stops reading new entries until tracked ones are due.

type delayedItem struct {
	at  int64 // Unix milliseconds
	pos Position
}

// delayedTracker holds delayed positions by due time. Guarded by subscription.mu.
type delayedTracker struct {
	h   delayedHeap
	set map[Position]bool
}

type delayedHeap []delayedItem

func (h delayedHeap) Len() int { return len(h) }
func (h delayedHeap) Less(i, j int) bool {
	return h[i].at < h[j].at || (h[i].at == h[j].at && h[i].pos.Less(h[j].pos))
}
func (h delayedHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *delayedHeap) Push(x any)   { *h = append(*h, x.(delayedItem)) }
func (h *delayedHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

func (d *delayedTracker) len() int {
	if d == nil {
		return 0
	}
	return len(d.h)
}

func (d *delayedTracker) has(p Position) bool { return d != nil && d.set[p] }

func (d *delayedTracker) add(p Position, at int64) {
	if d.set[p] {
		return
	}
	d.set[p] = true
	heap.Push(&d.h, delayedItem{at, p})
}

// popDue removes and returns up to max positions due at now (all of them if force).
func (d *delayedTracker) popDue(now int64, max int, force bool) []delayedItem {
	var out []delayedItem
	for d.len() > 0 && len(out) < max && (force || d.h[0].at <= now) {
		it := heap.Pop(&d.h).(delayedItem)
		delete(d.set, it.pos)
		out = append(out, it)
	}
	return out
}

func (d *delayedTracker) clear() {
	if d != nil {
		d.h, d.set = nil, map[Position]bool{}
	}
}

type delayVerdict int

const (
	delayNone delayVerdict = iota // dispatch now
	delayHeld                     // tracked: skip for now
	delayFull                     // tracker full: stop reading here
)

// delaysLocked tells whether the subscription holds delayed messages at all.
func (s *Subscription) delaysLocked() bool {
	return s.t.s.cfg.Delivery.DelayedDeliveryEnabled && s.d.delays()
}

// delayLocked decides about an entry just read whose deliver_at_time is at (0: none).
func (s *Subscription) delayLocked(p Position, at int64) delayVerdict {
	if s.delayed.has(p) {
		return delayHeld
	}
	if at == 0 || !s.delaysLocked() || at <= s.t.s.now().UnixMilli() {
		return delayNone
	}
	if s.delayed.len() >= s.t.s.cfg.Delivery.DelayedDeliveryMaxTrackedMessages {
		return delayFull
	}
	if s.delayed == nil {
		s.delayed = &delayedTracker{set: map[Position]bool{}}
	}
	s.delayed.add(p, at)
	return delayHeld
}

// delayedFullLocked tells whether new entries must not be read (the tracker is full).
func (s *Subscription) delayedFullLocked() bool {
	return s.delayed.len() >= s.t.s.cfg.Delivery.DelayedDeliveryMaxTrackedMessages
}

// nextDueLocked is when the dispatcher must look at the tracker again: the first tick at
// or after the earliest due time. ok is false when nothing is tracked.
func (s *Subscription) nextDueLocked() (time.Time, bool) {
	if s.delayed.len() == 0 {
		return time.Time{}, false
	}
	tick := int64(s.t.s.cfg.Delivery.DelayedDeliveryTickTimeMillis)
	at := s.delayed.h[0].at
	at = (at + tick - 1) / tick * tick
	return time.UnixMilli(at), true
}

// readContext is the context of a dispatch read: canceled by cancelRead, and with a
// deadline at the next due tick while delayed messages are tracked (at least a tick away
// when that is already past, so entries due but not yet handed out cannot make the
// dispatcher spin).
func (s *Subscription) readContext() (context.Context, context.CancelFunc) {
	if due, ok := s.nextDueLocked(); ok {
		tick := time.Duration(s.t.s.cfg.Delivery.DelayedDeliveryTickTimeMillis) * time.Millisecond
		now := s.t.s.now()
		if soonest := now.Add(tick); due.Before(soonest) && !due.After(now) {
			due = soonest
		}
		// A timeout, not a deadline: due is on the service's clock, which may be skewed
		// (clock.Offset) while context deadlines are on the system clock.
		return context.WithTimeout(context.Background(), due.Sub(now))
	}
	return context.WithCancel(context.Background())
}

// waitDueLocked waits (releasing s.mu) until the next tracked entry is due or a poke.
func (s *Subscription) waitDueLocked() {
	due, ok := s.nextDueLocked()
	if !ok {
		return
	}
	s.waitLocked(max(due.Sub(s.t.s.now()), time.Millisecond))
}

// dispatchDueLocked hands out the tracked entries that are due, as far as permits go, and
// returns how many it sent. Entries nobody can take now are tracked again (Shared) or held
// for their key's consumer (Key_Shared).
func (s *Subscription) dispatchDueLocked(backoff *time.Duration) (int, readStatus) {
	if s.delayed.len() == 0 {
		return 0, readOK
	}
	max := min(s.t.s.dyn.maxReadBatch(), max(s.permitsLocked(), 1))
	due := s.delayed.popDue(s.t.s.now().UnixMilli(), max, !s.delaysLocked())
	if len(due) == 0 {
		return 0, readOK
	}
	ps := make([]Position, len(due))
	at := make(map[Position]int64, len(due))
	for i, it := range due {
		ps[i], at[it.pos] = it.pos, it.at
	}
	entries, st := s.readLocked(backoff, func(ctx context.Context) ([]Entry, error) {
		return s.cursor.readPositions(ctx, ps)
	})
	if st != readOK {
		// Not handed out: track them again (a rewind or reset may have dropped the tracker;
		// then the re-read finds them anyway, and add ignores duplicates).
		if st == readAgain && s.delayed != nil {
			for _, it := range due {
				if !s.cursor.isAcked(it.pos) {
					s.delayed.add(it.pos, it.at)
				}
			}
		}
		return 0, st
	}
	sent := 0
	for _, e := range entries {
		if _, ok := s.pending[e.Position]; ok || s.cursor.isAcked(e.Position) {
			continue
		}
		m := metaOf(e)
		cs, slot, hold := s.d.route(e, m, false)
		switch {
		case hold: // the dispatcher keeps it for its key's consumer
			continue
		case cs == nil:
			s.delayed.add(e.Position, at[e.Position])
			continue
		}
		s.sendLocked(cs, e, msgCount(m), slot)
		sent++
	}
	if ks, ok := s.d.(*keySharedDispatcher); ok {
		ks.sortHeld()
	}
	return sent, readOK
}
