package topics

import (
	"fmt"
	"math/bits"
	"sort"
	"strconv"

	"github.com/magnetar-io/magnetar/internal/wire"
)

// Key_Shared routing. Every entry has a key (ordering_key, else partition_key, of its
// metadata; a batch is routed as a whole by its outer metadata) and the key's hash slot is
// murmur3_32(key) & 0x7fffffff mod 65536, as Pulsar computes it. In AUTO_SPLIT mode the
// slots are spread over the consumers by a consistent-hash ring (ringPoints points per
// consumer, so a consumer joining or leaving moves only its share of keys), or, with
// subscriptionKeySharedUseConsistentHashing=false, by halving ranges as Pulsar's
// HashRangeAutoSplitStickyKeyConsumerSelector does (splitAdd: a newcomer takes the lower
// half of the biggest range, so with two consumers the second takes slots 0..32768 every
// time); in STICKY mode each consumer declares the slot ranges it takes and slots nobody
// declared wait.
//
// Per-key order: an entry whose consumer has no permits is skipped for now, and so are all
// later entries of its key (they route to the same consumer); the dispatcher moves the
// cursor back to the first skipped entry after the batch.

const (
	keySlots   = 65536
	ringPoints = 100
)

type ringPoint struct {
	hash uint32
	c    *Consumer
}

// KeyHashSlot is the Key_Shared hash slot of a key (0..65535), as Pulsar computes it.
func KeyHashSlot(key string) int { return keyHashSlot(key) }

// keyHashSlot is the slot of a key.
func keyHashSlot(key string) int {
	return int(murmur3(key, 0)&0x7fffffff) % keySlots
}

// murmur3 is MurmurHash3 x86 32-bit (of the key's bytes).
func murmur3(data string, seed uint32) uint32 {
	const c1, c2 = 0xcc9e2d51, 0x1b873593
	h := seed
	n := len(data)
	for len(data) >= 4 {
		k := uint32(data[0]) | uint32(data[1])<<8 | uint32(data[2])<<16 | uint32(data[3])<<24
		k *= c1
		k = bits.RotateLeft32(k, 15)
		k *= c2
		h ^= k
		h = bits.RotateLeft32(h, 13)
		h = h*5 + 0xe6546b64
		data = data[4:]
	}
	var k uint32
	switch len(data) {
	case 3:
		k ^= uint32(data[2]) << 16
		fallthrough
	case 2:
		k ^= uint32(data[1]) << 8
		fallthrough
	case 1:
		k ^= uint32(data[0])
		k *= c1
		k = bits.RotateLeft32(k, 15)
		k *= c2
		h ^= k
	}
	h ^= uint32(n)
	h ^= h >> 16
	h *= 0x85ebca6b
	h ^= h >> 13
	h *= 0xc2b2ae35
	h ^= h >> 16
	return h
}

// keySharedDispatcher serves Key_Shared subscriptions: an entry goes to its key's
// consumer. One whose consumer cannot take it now (no permits, its slot still draining at
// another consumer, a newcomer's join limit: keyshared_join.go), or whose key already has
// entries held, is held back in replay, in position order, and retried first every round
// (retryHeld); so a key's entries always leave in order.
type keySharedDispatcher struct {
	s      *Subscription
	mode   KeySharedMode
	halves bool         // AUTO_SPLIT by halving ranges (splits) instead of the ring
	ring   []ringPoint  // AUTO_SPLIT: ringPoints per consumer, by hash
	splits []splitRange // AUTO_SPLIT with halves: by end
	replay []replayItem // entries held back, in position order
}

// splitRange is an AUTO_SPLIT range of the halving selector: its consumer takes the slots
// after the previous range's end up to end (inclusive; the first starts at slot 0, the
// last ends at keySlots).
type splitRange struct {
	end int
	c   *Consumer
}

// replayItem is a Key_Shared entry held back for a consumer that cannot take it now.
type replayItem struct {
	pos  Position
	slot int
}

// maxReplay bounds the Key_Shared held-back entries; beyond it the dispatcher stops reading
// new entries until some go out.
func maxReplay(readBatch int) int { return 10 * readBatch }

func (d *keySharedDispatcher) kind() SubType        { return KeyShared }
func (d *keySharedDispatcher) permits() int         { return d.s.permitsOfAll() }
func (d *keySharedDispatcher) delays() bool         { return true }
func (d *keySharedDispatcher) releasesListed() bool { return true }
func (d *keySharedDispatcher) joined(*Consumer)     {}

// admit registers cs with the key router: ring points (AUTO_SPLIT) or its declared ranges
// (STICKY, which must not overlap other consumers'); a mode other than the connected
// consumers' is ConsumerBusy.
func (d *keySharedDispatcher) admit(cs *Consumer, meta *KeySharedPolicy) error {
	s := d.s
	if meta == nil {
		meta = &KeySharedPolicy{}
	}
	mode := meta.Mode
	if len(s.consumers) > 0 && mode != d.mode {
		return fmt.Errorf("%w: subscription %s is Key_Shared %s, not %s", wire.ErrConsumerBusy, s.name, d.mode, mode)
	}
	d.mode = mode
	cs.outOfOrder = meta.AllowOutOfOrder // keyshared_join.go
	if mode == Sticky {
		if len(meta.Ranges) == 0 {
			return fmt.Errorf("%w: sticky Key_Shared consumer without hash ranges", wire.ErrNotAllowed)
		}
		for _, r := range meta.Ranges {
			if r.Start < 0 || r.End >= keySlots || r.Start > r.End {
				return fmt.Errorf("%w: hash range [%d, %d] outside 0..%d", wire.ErrNotAllowed, r.Start, r.End, keySlots-1)
			}
			for _, other := range s.consumers {
				for _, o := range other.ranges {
					if r.Start <= o.End && o.Start <= r.End {
						return fmt.Errorf("%w: hash range [%d, %d] overlaps consumer %q", wire.ErrConsumerBusy, r.Start, r.End, other.name)
					}
				}
			}
		}
		cs.ranges = meta.Ranges
		return nil
	}
	if d.halves {
		if err := d.splitAdd(cs); err != nil {
			return err
		}
		s.setJoinLimitLocked(cs, meta) // keyshared_join.go
		return nil
	}
	s.setJoinLimitLocked(cs, meta) // keyshared_join.go
	for i := 0; i < ringPoints; i++ {
		h := murmur3(cs.name+"#"+strconv.Itoa(i)+"#"+strconv.FormatUint(cs.id, 10)+cs.client.Address(), 0)
		d.ring = append(d.ring, ringPoint{h, cs})
	}
	sort.Slice(d.ring, func(i, j int) bool { return d.ring[i].hash < d.ring[j].hash })
	return nil
}

// splitAdd gives cs the lower half of the biggest range (the first of equal ones), or the
// whole range to the first consumer; when no range can be halved any more it refuses, as
// Pulsar does ("all the hash ranges are assigned").
func (d *keySharedDispatcher) splitAdd(cs *Consumer) error {
	if len(d.splits) == 0 {
		d.splits = append(d.splits, splitRange{keySlots, cs})
		return nil
	}
	best, size, prev := 0, 0, 0
	for i, r := range d.splits {
		if r.end-prev > size {
			best, size = i, r.end-prev
		}
		prev = r.end
	}
	if size < 2 {
		return fmt.Errorf("%w: all the hash ranges of Key_Shared subscription %s are assigned", wire.ErrConsumerBusy, d.s.name)
	}
	start := 0
	if best > 0 {
		start = d.splits[best-1].end
	}
	mid := start + size/2
	d.splits = append(d.splits, splitRange{})
	copy(d.splits[best+1:], d.splits[best:])
	d.splits[best] = splitRange{mid, cs}
	return nil
}

// splitRemove hands a leaving consumer's range to the next one up; the last range's
// consumer is replaced by the one below, whose range then reaches the end.
func (d *keySharedDispatcher) splitRemove(cs *Consumer) {
	for i, r := range d.splits {
		if r.c != cs {
			continue
		}
		if i == len(d.splits)-1 && i > 0 {
			d.splits[i-1].end = r.end
		}
		d.splits = append(d.splits[:i], d.splits[i+1:]...)
		return
	}
}

func (d *keySharedDispatcher) left(cs *Consumer) {
	if d.halves {
		d.splitRemove(cs)
		return
	}
	out := d.ring[:0]
	for _, p := range d.ring {
		if p.c != cs {
			out = append(out, p)
		}
	}
	d.ring = out
}

// flowed wakes a dispatcher waiting at the tail: held-back entries may go now.
func (d *keySharedDispatcher) flowed(*Consumer) {
	if len(d.replay) > 0 && d.s.cancelRead != nil {
		d.s.cancelRead()
	}
}

// consumerOf is the consumer that owns slot, or nil.
func (d *keySharedDispatcher) consumerOf(slot int) *Consumer {
	if d.mode == Sticky {
		for _, cs := range d.s.consumers {
			for _, r := range cs.ranges {
				if int(r.Start) <= slot && slot <= int(r.End) {
					return cs
				}
			}
		}
		return nil
	}
	if d.halves {
		i := sort.Search(len(d.splits), func(i int) bool { return d.splits[i].end >= slot })
		if i == len(d.splits) {
			return nil
		}
		return d.splits[i].c
	}
	if len(d.ring) == 0 {
		return nil
	}
	// Spread the 16-bit slot over the 32-bit ring.
	h := uint32(slot) * (1 << 16)
	i := sort.Search(len(d.ring), func(i int) bool { return d.ring[i].hash >= h })
	if i == len(d.ring) {
		i = 0
	}
	return d.ring[i].c
}

// route sends an entry to its key's consumer if that consumer may take it now, and holds it
// otherwise; a fresh entry of a key with entries already held waits behind them.
func (d *keySharedDispatcher) route(e Entry, m EntryMeta, fresh bool) (*Consumer, int, bool) {
	s := d.s
	slot := keyHashSlot(m.Key)
	cs := d.consumerOf(slot)
	if cs == nil || !s.canReceiveLocked(cs) || (fresh && d.slotWaiting(slot)) || s.keyBlockedLocked(cs, slot, e.Position) {
		d.replay = append(d.replay, replayItem{e.Position, slot})
		return nil, slot, true
	}
	return cs, slot, false
}

// routeNonPersistent gives a non-persistent message to its key's consumer if it has permits.
func (d *keySharedDispatcher) routeNonPersistent(m EntryMeta) *Consumer {
	if cs := d.consumerOf(keyHashSlot(m.Key)); cs != nil && cs.permits > 0 {
		return cs
	}
	return nil
}

func (d *keySharedDispatcher) slotWaiting(slot int) bool {
	for _, r := range d.replay {
		if r.slot == slot {
			return true
		}
	}
	return false
}

func (d *keySharedDispatcher) held() []Position {
	if len(d.replay) == 0 {
		return nil
	}
	ps := make([]Position, len(d.replay))
	for i, r := range d.replay {
		ps[i] = r.pos
	}
	return ps
}

// retryHeld retries the held-back entries, oldest first; an entry of a key stays held while
// an older entry of the same key does, which keeps per-key order.
func (d *keySharedDispatcher) retryHeld(entries []Entry) int {
	s := d.s
	byPos := make(map[Position]Entry, len(entries))
	for _, e := range entries {
		byPos[e.Position] = e
	}
	held := d.replay
	d.replay = nil
	blocked := map[int]bool{}
	sent := 0
	for _, r := range held {
		e, ok := byPos[r.pos]
		if !ok {
			continue // acknowledged or trimmed meanwhile
		}
		if _, busy := s.pending[r.pos]; busy {
			continue
		}
		cs := d.consumerOf(r.slot)
		if blocked[r.slot] || cs == nil || !s.canReceiveLocked(cs) || s.keyBlockedLocked(cs, r.slot, r.pos) {
			blocked[r.slot] = true
			d.replay = append(d.replay, r)
			continue
		}
		s.sendLocked(cs, e, msgCount(metaOf(e)), r.slot)
		sent++
	}
	return sent
}

func (d *keySharedDispatcher) holdFull() bool {
	return len(d.replay) >= maxReplay(d.s.t.s.dyn.maxReadBatch())
}
func (d *keySharedDispatcher) dropHeld() { d.replay = d.replay[:0] }

// sortHeld restores the position order of the held-back entries after due delayed entries
// joined them.
func (d *keySharedDispatcher) sortHeld() {
	sort.SliceStable(d.replay, func(i, j int) bool { return d.replay[i].pos.Less(d.replay[j].pos) })
}

// stalled: nothing went out although consumers had permits (every entry was for a consumer
// without any); the loop waits for a FLOW or a consumer change, or a little while.
func (d *keySharedDispatcher) stalled(sent int) bool { return sent == 0 }
