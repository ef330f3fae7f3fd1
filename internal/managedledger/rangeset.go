package managedledger

import (
	"sort"
	"strconv"
	"strings"
)

// Span is a run of consecutive entries First..Last (inclusive) of one ledger.
type Span struct {
	LedgerID    int64
	First, Last int64
}

// Count is the number of entries in the span.
func (s Span) Count() int64 { return s.Last - s.First + 1 }

func (s Span) end() Position   { return Position{s.LedgerID, s.Last} }
func (s Span) start() Position { return Position{s.LedgerID, s.First} }

// RangeSet is the set of individually acknowledged positions of a cursor, kept as sorted,
// disjoint, non-adjacent spans. Random out-of-order acks over a window of W entries cost at
// most W/2 spans; the slice is kept sorted so membership is a binary search and the common
// in-order case (extend the last span) is O(1).
//
// Spans never cross a ledger boundary: whether (L, n) and (L+1, 0) are adjacent depends on
// the ledger list, which the cursor consults when it folds spans into its mark-delete position.
type RangeSet struct {
	spans []Span
	count int64
}

// search returns the index of the first span whose end is >= p.
func (r *RangeSet) search(p Position) int {
	n := len(r.spans)
	// Fast path for in-order acks: p beyond the last span.
	if n > 0 && r.spans[n-1].end().Less(p) {
		return n
	}
	return sort.Search(n, func(i int) bool { return !r.spans[i].end().Less(p) })
}

// Add inserts p and reports whether it was new.
func (r *RangeSet) Add(p Position) bool {
	i := r.search(p)
	n := len(r.spans)
	if i < n && !p.Less(r.spans[i].start()) {
		return false // contained
	}
	left := i > 0 && r.spans[i-1].LedgerID == p.LedgerID && r.spans[i-1].Last+1 == p.EntryID
	right := i < n && r.spans[i].LedgerID == p.LedgerID && r.spans[i].First-1 == p.EntryID
	switch {
	case left && right:
		r.spans[i-1].Last = r.spans[i].Last
		r.spans = append(r.spans[:i], r.spans[i+1:]...)
	case left:
		r.spans[i-1].Last++
	case right:
		r.spans[i].First--
	default:
		r.spans = append(r.spans, Span{})
		copy(r.spans[i+1:], r.spans[i:])
		r.spans[i] = Span{LedgerID: p.LedgerID, First: p.EntryID, Last: p.EntryID}
	}
	r.count++
	return true
}

// Contains reports whether p is in the set.
func (r *RangeSet) Contains(p Position) bool {
	i := r.search(p)
	return i < len(r.spans) && !p.Less(r.spans[i].start())
}

// NextGap returns the first position >= p (within p's ledger) that is not in the set.
func (r *RangeSet) NextGap(p Position) Position {
	i := r.search(p)
	if i < len(r.spans) && !p.Less(r.spans[i].start()) {
		return Position{p.LedgerID, r.spans[i].Last + 1}
	}
	return p
}

// RemoveThrough drops every position <= p.
func (r *RangeSet) RemoveThrough(p Position) {
	i := r.search(p)
	removed := int64(0)
	for j := 0; j < i; j++ {
		removed += r.spans[j].Count()
	}
	if i < len(r.spans) && !p.Less(r.spans[i].start()) {
		// p falls inside span i: cut its head.
		removed += p.EntryID - r.spans[i].First + 1
		r.spans[i].First = p.EntryID + 1
		if r.spans[i].First > r.spans[i].Last {
			i++
		}
	}
	r.spans = append(r.spans[:0], r.spans[i:]...)
	r.count -= removed
}

// First returns the lowest span.
func (r *RangeSet) First() (Span, bool) {
	if len(r.spans) == 0 {
		return Span{}, false
	}
	return r.spans[0], true
}

// CountBetween returns how many positions of the set lie in (from, to].
func (r *RangeSet) CountBetween(from, to Position) int64 {
	var n int64
	for i := r.search(Position{from.LedgerID, from.EntryID + 1}); i < len(r.spans); i++ {
		s := r.spans[i]
		if to.Less(s.start()) {
			break
		}
		lo, hi := s.First, s.Last
		if s.LedgerID == from.LedgerID && lo <= from.EntryID {
			lo = from.EntryID + 1
		}
		if s.LedgerID == to.LedgerID && hi > to.EntryID {
			hi = to.EntryID
		}
		if hi >= lo {
			n += hi - lo + 1
		}
	}
	return n
}

// Len is the number of spans.
func (r *RangeSet) Len() int { return len(r.spans) }

// Count is the number of positions.
func (r *RangeSet) Count() int64 { return r.count }

// Spans returns a copy of the spans in order.
func (r *RangeSet) Spans() []Span { return append([]Span(nil), r.spans...) }

// Clear empties the set.
func (r *RangeSet) Clear() { r.spans, r.count = r.spans[:0], 0 }

// Clone returns an independent copy.
func (r *RangeSet) Clone() *RangeSet {
	return &RangeSet{spans: append([]Span(nil), r.spans...), count: r.count}
}

// String formats the set as Pulsar's internal stats do: "[(3:5..3:9],(4:-1..4:2]]", each
// range open below and closed above.
func (r *RangeSet) String() string { return formatSpans(r.spans) }

func formatSpans(spans []Span) string {
	var sb strings.Builder
	sb.WriteByte('[')
	for i, s := range spans {
		if i > 0 {
			sb.WriteByte(',')
		}
		sb.WriteByte('(')
		sb.WriteString(strconv.FormatInt(s.LedgerID, 10))
		sb.WriteByte(':')
		sb.WriteString(strconv.FormatInt(s.First-1, 10))
		sb.WriteString("..")
		sb.WriteString(strconv.FormatInt(s.LedgerID, 10))
		sb.WriteByte(':')
		sb.WriteString(strconv.FormatInt(s.Last, 10))
		sb.WriteByte(']')
	}
	sb.WriteByte(']')
	return sb.String()
}
