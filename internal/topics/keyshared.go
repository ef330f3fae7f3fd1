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
// consumer, so a consumer joining or leaving moves only its share of keys); in STICKY mode
// each consumer declares the slot ranges it takes and slots nobody declared wait.
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

// addKeySharedLocked registers cs with the key router: ring points (AUTO_SPLIT) or its
// declared ranges (STICKY, which must not overlap other consumers').
func (s *Subscription) addKeySharedLocked(cs *Consumer, meta *KeySharedPolicy) error {
	if meta == nil {
		meta = &KeySharedPolicy{}
	}
	mode := meta.Mode
	if len(s.consumers) > 0 && mode != s.ksMode {
		return fmt.Errorf("%w: subscription %s is Key_Shared %s, not %s", wire.ErrConsumerBusy, s.name, s.ksMode, mode)
	}
	s.ksMode = mode
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
	s.setJoinLimitLocked(cs, meta) // keyshared_join.go
	for i := 0; i < ringPoints; i++ {
		h := murmur3(cs.name+"#"+strconv.Itoa(i)+"#"+strconv.FormatUint(cs.id, 10)+cs.client.Address(), 0)
		s.ring = append(s.ring, ringPoint{h, cs})
	}
	sort.Slice(s.ring, func(i, j int) bool { return s.ring[i].hash < s.ring[j].hash })
	return nil
}

func (s *Subscription) removeKeySharedLocked(cs *Consumer) {
	out := s.ring[:0]
	for _, p := range s.ring {
		if p.c != cs {
			out = append(out, p)
		}
	}
	s.ring = out
}

// keyConsumerLocked is the consumer that owns slot, or nil.
func (s *Subscription) keyConsumerLocked(slot int) *Consumer {
	if s.ksMode == Sticky {
		for _, cs := range s.consumers {
			for _, r := range cs.ranges {
				if int(r.Start) <= slot && slot <= int(r.End) {
					return cs
				}
			}
		}
		return nil
	}
	if len(s.ring) == 0 {
		return nil
	}
	// Spread the 16-bit slot over the 32-bit ring.
	h := uint32(slot) * (1 << 16)
	i := sort.Search(len(s.ring), func(i int) bool { return s.ring[i].hash >= h })
	if i == len(s.ring) {
		i = 0
	}
	return s.ring[i].c
}
