package managedledger

import (
	"encoding/binary"
	"fmt"
	"sort"
)

// Batch-index acknowledgement. A stored entry may hold a batch of messages; a consumer
// that acknowledges some of them sends a bitset whose set bits are the members it has NOT
// acknowledged (Pulsar's ack_set). The cursor keeps, per partly acknowledged entry, the
// intersection of every such bitset (a member is done once any ack cleared its bit); when
// no bit is left the entry is acknowledged as a whole. The bitsets are persisted with the
// rest of the cursor state (version 2 of the binary state, see doc.go), so a restart
// redelivers only the members still unacknowledged.

// maxBatchAckWords bounds one entry's bitset (64 Ki batch members), so a bad ack_set
// cannot make the cursor hold or persist arbitrary amounts of memory.
const maxBatchAckWords = 1024

// AckBatchIndexes records a partial acknowledgement of the batch entry at pos: remaining
// has a bit set for every member not acknowledged by this ack. It reports whether the
// entry is now acknowledged as a whole (then it is deleted like Delete does). An entry
// already acknowledged reports true.
func (c *Cursor) AckBatchIndexes(pos Position, remaining []uint64) (bool, error) {
	if len(remaining) > maxBatchAckWords {
		return false, fmt.Errorf("%w: batch ack set of %d words (most %d)", ErrInvalidPosition, len(remaining), maxBatchAckWords)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.checkOpenLocked(); err != nil {
		return false, err
	}
	c.ml.mu.Lock()
	defer c.ml.mu.Unlock()
	if lc := c.ml.lastConfirmedLocked(); lc.Less(pos) {
		return false, fmt.Errorf("%w: batch ack %v beyond last confirmed entry %v", ErrInvalidPosition, pos, lc)
	}
	if !c.markDelete.Less(pos) || c.acked.Contains(pos) || !c.ml.isStoredLocked(pos) {
		return true, nil
	}
	bits := append([]uint64(nil), remaining...)
	if old, ok := c.batchAcks[pos]; ok {
		for i := range bits {
			if i < len(old) {
				bits[i] &= old[i]
			} else {
				bits[i] = 0 // the earlier ack's batch had no such member
			}
		}
	}
	if !anyBit(bits) {
		delete(c.batchAcks, pos)
		c.acked.Add(pos)
		c.consumed++
		c.foldLocked()
		c.changedLocked()
		return true, nil
	}
	if c.batchAcks == nil {
		c.batchAcks = map[Position][]uint64{}
	}
	c.batchAcks[pos] = bits
	c.changedLocked()
	return false, nil
}

// BatchAckSet returns the members of the entry at pos not yet acknowledged (set bits), or
// nil if the entry has no partial acknowledgement.
func (c *Cursor) BatchAckSet(pos Position) []uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	if bits, ok := c.batchAcks[pos]; ok {
		return append([]uint64(nil), bits...)
	}
	return nil
}

func anyBit(bits []uint64) bool {
	for _, w := range bits {
		if w != 0 {
			return true
		}
	}
	return false
}

// pruneBatchAcksLocked forgets the bitsets of entries acknowledged as a whole meanwhile.
// Caller holds c.mu.
func (c *Cursor) pruneBatchAcksLocked() {
	for p := range c.batchAcks {
		if !c.markDelete.Less(p) || c.acked.Contains(p) {
			delete(c.batchAcks, p)
		}
	}
}

// encodeCursorStateBatches is encodeCursorState with the partly acknowledged batches.
func encodeCursorStateBatches(md Position, acked *RangeSet, batches map[Position][]uint64, maxEntries int) []byte {
	return encodeCursorStateFull(md, acked, maxEntries, nil, batches)
}

// appendBatchAcks appends the batch section of a version-2 state: at most maxEntries
// batches, the lowest positions first (a dropped bitset only causes redelivery of members
// already acknowledged).
func appendBatchAcks(b []byte, batches map[Position][]uint64, maxEntries int) []byte {
	ps := make([]Position, 0, len(batches))
	for p := range batches {
		ps = append(ps, p)
	}
	sort.Slice(ps, func(i, j int) bool { return ps[i].Less(ps[j]) })
	if len(ps) > maxEntries {
		ps = ps[:maxEntries]
	}
	b = binary.AppendUvarint(b, uint64(len(ps)))
	for _, p := range ps {
		bits := batches[p]
		b = binary.AppendVarint(b, p.LedgerID)
		b = binary.AppendVarint(b, p.EntryID)
		b = binary.AppendUvarint(b, uint64(len(bits)))
		for _, w := range bits {
			b = binary.LittleEndian.AppendUint64(b, w)
		}
	}
	return b
}

// decodeBatchAcks parses the batch section of a version-2 cursor state and returns the
// bytes after it.
func decodeBatchAcks(b []byte) ([]byte, map[Position][]uint64, error) {
	bad := func(what string) ([]byte, map[Position][]uint64, error) {
		return nil, nil, fmt.Errorf("%w: cursor state: %s", ErrCorruptMetadata, what)
	}
	n, k := binary.Uvarint(b)
	if k <= 0 || n > uint64(len(b)) {
		return bad("bad batch count")
	}
	b = b[k:]
	out := make(map[Position][]uint64, n)
	for i := uint64(0); i < n; i++ {
		l, k1 := binary.Varint(b)
		if k1 <= 0 {
			return bad("truncated batch position")
		}
		e, k2 := binary.Varint(b[k1:])
		if k2 <= 0 {
			return bad("truncated batch position")
		}
		b = b[k1+k2:]
		if l < 0 || e < 0 || l >= maxCoord || e >= maxCoord {
			return bad("batch position out of range")
		}
		words, k3 := binary.Uvarint(b)
		if k3 <= 0 || words == 0 || words > maxBatchAckWords || words*8 > uint64(len(b)-k3) {
			return bad("bad batch bitset length")
		}
		b = b[k3:]
		bits := make([]uint64, words)
		for j := range bits {
			bits[j] = binary.LittleEndian.Uint64(b)
			b = b[8:]
		}
		out[Position{l, e}] = bits
	}
	return b, out, nil
}
