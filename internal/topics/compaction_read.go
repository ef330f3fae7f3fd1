package topics

import (
	"context"
	"fmt"

	"github.com/magnetar-io/magnetar/internal/wire"
)

// Reading a compacted topic (SUBSCRIBE with read_compacted, Pulsar's readCompacted): while
// the subscription is before the compaction horizon it reads the compacted ledger's
// records, as entries at their original positions (a batch with dropped members is sent
// with an ack_set that masks them); past the last record it moves its cursor after the
// horizon and reads the topic as usual. Pulsar allows it on persistent topics, on
// Exclusive and Failover subscriptions (readers are Exclusive).
//
// Where the compacted phase stands is kept here rather than in the cursor: records may sit
// in ledgers retention already removed, which a cursor's position cannot point into (it
// moves to the oldest stored entry), and a new subscription at the earliest position has
// its mark-delete position just before the oldest stored entry, after such records.

// compactedRead is a readCompacted subscription's state; guarded by Subscription.mu.
type compactedRead struct {
	// after: records after this position are still to be read (the compacted phase ends
	// once after reaches the horizon).
	after Position
	// base and floor: a subscription created at the earliest position starts at base
	// (Earliest) although its mark-delete position is floor; positions at or before floor
	// are not acknowledged for it, and a rewind that finds the mark-delete position still at
	// floor goes back to base.
	base, floor Position
	// kept is the member mask of the partly kept batches of the last compacted read.
	kept map[Position][]uint64
	// past: the compacted phase is over and the cursor was moved after the horizon.
	past bool
}

// checkReadCompacted refuses readCompacted where Pulsar does.
func (t *Topic) checkReadCompacted(spec ConsumerSpec) error {
	switch {
	case !spec.ReadCompacted:
		return nil
	case t.log == nil:
		return fmt.Errorf("%w: readCompacted is not allowed on non-persistent topic %s", wire.ErrNotAllowed, t.full)
	case spec.Type != Exclusive && spec.Type != Failover:
		return fmt.Errorf("%w: readCompacted only allowed on failover or exclusive subscriptions", wire.ErrNotAllowed)
	}
	return nil
}

// newCompactedRead is the state of a new readCompacted subscription whose cursor is cur;
// fresh tells the cursor was created by this subscribe (a durable one) or is a reader.
func newCompactedRead(spec ConsumerSpec, cur *logCursor, fresh bool) *compactedRead {
	md := cur.markDeletePosition()
	r := &compactedRead{after: md, base: md, floor: md}
	switch {
	case spec.Durable && fresh && spec.InitialEarliest, !spec.Durable && readerStart(spec) == Earliest:
		r.after, r.base = Earliest, Earliest
	case !spec.Durable && spec.Start != nil && *spec.Start != Latest:
		r.after = prevPosition(*spec.Start)
		r.base = r.after
	}
	return r
}

// prevPosition is the position whose successor is p, (L, -1) for the first entry of L.
func prevPosition(p Position) Position {
	if p.EntryID <= 0 {
		return Position{LedgerID: p.LedgerID, EntryID: -1}
	}
	return Position{LedgerID: p.LedgerID, EntryID: p.EntryID - 1}
}

// compactedReadResult is what a compacted read found, applied under s.mu if the read
// stands (no rewind or reset came in between).
type compactedReadResult struct {
	after Position
	kept  map[Position][]uint64
	past  bool
}

// compactedReader is the read of run for a readCompacted subscription: up to n records of
// the compacted ledger after s.cmp.after, or, once past them, the cursor's read. Caller
// holds s.mu; the returned function runs without it.
func (s *Subscription) compactedReader(n int) (func(context.Context) ([]Entry, error), *compactedReadResult) {
	res := &compactedReadResult{after: s.cmp.after, past: s.cmp.past}
	after := s.cmp.after
	return func(ctx context.Context) ([]Entry, error) {
		if res.past {
			return s.cursor.read(ctx, n)
		}
		v, err := s.t.compactedView(ctx)
		if err != nil {
			return nil, err
		}
		if v == nil || v.horizon.Less(after) {
			res.past = true
			return s.cursor.read(ctx, n)
		}
		i := v.firstAfter(after)
		if i >= len(v.positions) {
			// Past the last record: continue with the topic after the horizon.
			res.after, res.past = v.horizon, true
			s.cursor.seek(Position{LedgerID: v.horizon.LedgerID, EntryID: v.horizon.EntryID + 1})
			return s.cursor.read(ctx, n)
		}
		last := min(i+n, len(v.positions)) - 1
		datas, err := v.r.Read(ctx, int64(i), int64(last))
		if err != nil {
			return nil, fmt.Errorf("%w: %w", wire.ErrPersistence, err)
		}
		out := make([]Entry, 0, len(datas))
		for _, d := range datas {
			rec, err := decodeCompactedRecord(d)
			if err != nil {
				return nil, fmt.Errorf("%w: compacted ledger %d: %w", wire.ErrPersistence, v.r.ID(), err)
			}
			if rec.kept != nil {
				if res.kept == nil {
					res.kept = map[Position][]uint64{}
				}
				res.kept[rec.pos] = rec.kept
			}
			out = append(out, Entry{Position: rec.pos, Data: rec.data, Meta: ParseEntryMeta(rec.data)})
			res.after = rec.pos
		}
		return out, nil
	}, res
}

// applyCompactedReadLocked records a compacted read that stands.
func (s *Subscription) applyCompactedReadLocked(res *compactedReadResult) {
	s.cmp.after, s.cmp.kept, s.cmp.past = res.after, res.kept, res.past
}

// compactedSeekBackLocked is the cursor's seek back to p (entries from p on were not
// sent) for the compacted phase.
func (s *Subscription) compactedSeekBackLocked(p Position) {
	if s.cmp != nil && !s.cmp.past && !s.cmp.after.Less(p) {
		s.cmp.after = prevPosition(p)
	}
}

// rewindCompactedLocked goes back to the first record not acknowledged (run's rewind).
func (s *Subscription) rewindCompactedLocked() {
	if s.cmp == nil {
		return
	}
	s.cmp.past = false
	md := s.cursor.markDeletePosition()
	if s.cmp.floor.Less(md) {
		s.cmp.after = md
	} else {
		s.cmp.after = s.cmp.base
	}
}

// resetCompactedLocked follows a reset of the cursor (seek) to p (Earliest: the start),
// or, with p nil, to a time: then from the new mark-delete position.
func (s *Subscription) resetCompactedLocked(p *Position) {
	if s.cmp == nil {
		return
	}
	md := s.cursor.markDeletePosition()
	s.cmp.floor, s.cmp.past = md, false
	switch {
	case p == nil:
		s.cmp.after, s.cmp.base = md, md
	case *p == Earliest || p.LedgerID < 0:
		s.cmp.after, s.cmp.base = Earliest, Earliest
	default:
		s.cmp.after = prevPosition(*p)
		s.cmp.base = s.cmp.after
	}
}

// compactedUnackedLocked tells that an acknowledged-looking position is a record before
// the subscription's floor: not acknowledged by it (see compactedRead).
func (s *Subscription) compactedUnackedLocked(p Position) bool {
	return s.cmp != nil && !s.cmp.floor.Less(p) && s.cmp.base.Less(p)
}

// compactedKeptLocked is the member mask of a partly kept compacted batch just read, or nil.
func (s *Subscription) compactedKeptLocked(p Position) []uint64 {
	if s.cmp == nil {
		return nil
	}
	return s.cmp.kept[p]
}

// compactedAckSetLocked is the ack_set of a partly kept compacted batch: its kept members
// less those the subscription acknowledged.
func (s *Subscription) compactedAckSetLocked(p Position, kept []uint64) []int64 {
	acked := s.cursor.batchAckSet(p) // nil: none acknowledged individually
	out := make([]int64, len(kept))
	for i, w := range kept {
		if acked != nil {
			if i < len(acked) {
				w &= acked[i]
			} else {
				w = 0
			}
		}
		out[i] = int64(w)
	}
	return out
}
