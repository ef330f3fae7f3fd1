package managedledger

import (
	"bytes"
	"encoding/json"
	"errors"
	"math/rand/v2"
	"testing"
	"time"
)

// refSet is the obvious model of a RangeSet: a map of positions.
type refSet map[Position]bool

func (r refSet) spans() []Span {
	var ps []Position
	for p := range r {
		ps = append(ps, p)
	}
	sortPositions(ps)
	var out []Span
	for _, p := range ps {
		if n := len(out); n > 0 && out[n-1].LedgerID == p.LedgerID && out[n-1].Last+1 == p.EntryID {
			out[n-1].Last++
			continue
		}
		out = append(out, Span{p.LedgerID, p.EntryID, p.EntryID})
	}
	return out
}

func sortPositions(ps []Position) {
	for i := 1; i < len(ps); i++ {
		for j := i; j > 0 && ps[j].Less(ps[j-1]); j-- {
			ps[j], ps[j-1] = ps[j-1], ps[j]
		}
	}
}

func TestRangeSetAgainstModel(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	for iter := 0; iter < 200; iter++ {
		var rs RangeSet
		ref := refSet{}
		for op := 0; op < 60; op++ {
			p := Position{int64(rng.IntN(3)), int64(rng.IntN(20))}
			switch rng.IntN(6) {
			case 0:
				rs.RemoveThrough(p)
				for q := range ref {
					if !p.Less(q) {
						delete(ref, q)
					}
				}
			default:
				if got, want := rs.Add(p), !ref[p]; got != want {
					t.Fatalf("Add(%v) = %v, want %v", p, got, want)
				}
				ref[p] = true
			}
			q := Position{int64(rng.IntN(3)), int64(rng.IntN(20))}
			if rs.Contains(q) != ref[q] {
				t.Fatalf("Contains(%v) = %v", q, rs.Contains(q))
			}
			if rs.Count() != int64(len(ref)) {
				t.Fatalf("Count = %d, want %d", rs.Count(), len(ref))
			}
			if got, want := formatSpans(rs.spans), formatSpans(ref.spans()); got != want {
				t.Fatalf("spans %s, want %s", got, want)
			}
			from, to := Position{int64(rng.IntN(3)), int64(rng.IntN(20)) - 1}, Position{int64(rng.IntN(3)), int64(rng.IntN(20))}
			n := int64(0)
			for p := range ref {
				if from.Less(p) && !to.Less(p) {
					n++
				}
			}
			if got := rs.CountBetween(from, to); got != n {
				t.Fatalf("CountBetween(%v,%v) = %d, want %d (%s)", from, to, got, n, rs.String())
			}
		}
	}
}

func TestCursorStateCodecRoundTrip(t *testing.T) {
	var rs RangeSet
	for _, p := range []Position{{5, 3}, {5, 4}, {5, 9}, {7, 0}, {7, 2}, {9, 100}} {
		rs.Add(p)
	}
	md := Position{5, 1}
	b := encodeCursorState(md, &rs, 100)
	st, err := decodeCursorState(b)
	must(t, err)
	if st.MarkDelete != md || st.Acked.String() != rs.String() || st.Acked.Count() != rs.Count() {
		t.Fatalf("round trip: %v %s, want %v %s", st.MarkDelete, st.Acked, md, rs.String())
	}
	// The cap keeps the lowest spans.
	st, err = decodeCursorState(encodeCursorState(md, &rs, 2))
	must(t, err)
	if st.Acked.String() != "[(5:2..5:4],(5:8..5:9]]" {
		t.Fatalf("capped: %s", st.Acked)
	}
	// Nothing acked and a fresh ledger (-1 entry).
	st, err = decodeCursorState(encodeCursorState(Position{3, -1}, &RangeSet{}, 10))
	must(t, err)
	if st.MarkDelete != (Position{3, -1}) || st.Acked.Len() != 0 {
		t.Fatalf("empty state %+v", st)
	}
	for _, bad := range [][]byte{nil, {2}, {1}, {1, 2, 2, 200}, append(b, 0)} {
		if _, err := decodeCursorState(bad); !errors.Is(err, ErrCorruptMetadata) {
			t.Fatalf("decode(%v) = %v, want ErrCorruptMetadata", bad, err)
		}
	}
}

// FuzzCursorState checks that the cursor-state decoder never panics, rejects with
// ErrCorruptMetadata, and that whatever it accepts re-encodes to a state that decodes the
// same (a canonical form).
func FuzzCursorState(f *testing.F) {
	var rs RangeSet
	for _, p := range []Position{{5, 3}, {5, 4}, {5, 9}, {7, 0}, {9, 100}} {
		rs.Add(p)
	}
	f.Add(encodeCursorState(Position{5, 1}, &rs, 100))
	f.Add(encodeCursorState(Position{0, -1}, &RangeSet{}, 100))
	f.Add(encodeCursorStateBatches(Position{5, 1}, &rs, map[Position][]uint64{{5, 2}: {3}, {8, 0}: {0, 1}}, 100))
	f.Add([]byte{2, 0, 0, 0, 1, 0, 0, 0xff, 0xff, 0xff, 0xff, 0x0f})
	f.Add([]byte{1, 0, 0, 1, 0, 0, 0})
	f.Add(encodeCursorStateProps(Position{5, 1}, &rs, 100, map[string]int64{"p": 3, "q": -1}))
	f.Add([]byte{1, 1, 1, 3, 0, 0, 0, 0, 0, 0, 0, 0, 0})
	f.Add([]byte{1, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01})
	f.Fuzz(func(t *testing.T, b []byte) {
		st, err := decodeCursorState(b)
		if err != nil {
			if !errors.Is(err, ErrCorruptMetadata) {
				t.Fatalf("error %v does not wrap ErrCorruptMetadata", err)
			}
			return
		}
		var n int64
		prev := st.MarkDelete
		for _, s := range st.Acked.spans {
			if s.First > s.Last || !prev.Less(s.start()) {
				t.Fatalf("decoded spans not ascending after %v: %s", st.MarkDelete, st.Acked)
			}
			prev = s.end()
			n += s.Count()
		}
		if n != st.Acked.Count() {
			t.Fatalf("count %d, spans hold %d", st.Acked.Count(), n)
		}
		again, err := decodeCursorState(encodeCursorStateFull(st.MarkDelete, st.Acked, 1<<30, st.Props, st.BatchAcks))
		if err != nil || again.MarkDelete != st.MarkDelete || again.Acked.String() != st.Acked.String() || len(again.Props) != len(st.Props) || len(again.BatchAcks) != len(st.BatchAcks) {
			t.Fatalf("re-encode: %v %v", again, err)
		}
	})
}

// FuzzMetadataInfo checks the JSON decoders of the ledger list and cursor snapshot.
func FuzzMetadataInfo(f *testing.F) {
	f.Add(encodeMLInfo(&mlInfo{Ledgers: []ledgerInfo{{1, 10, 100, 5, nil}, {3, 0, 0, 6, &offloadContext{UUID: "u", Complete: true}}}, Terminated: &Position{1, 9}}))
	f.Add(encodeCursorInfo(&cursorInfo{CursorsLedgerID: 4, MarkDelete: Position{1, 2}, State: []byte{1, 2, 4, 0}}))
	f.Add([]byte(`{"ledgers":[{"ledgerId":3},{"ledgerId":2}]}`))
	f.Add([]byte(`{"state":"!!"}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		if info, err := decodeMLInfo(b); err == nil {
			again, err := decodeMLInfo(encodeMLInfo(info))
			if err != nil || !bytes.Equal(encodeMLInfo(again), encodeMLInfo(info)) {
				t.Fatalf("ledger list does not round-trip: %v", err)
			}
		} else if !errors.Is(err, ErrCorruptMetadata) {
			t.Fatalf("error %v does not wrap ErrCorruptMetadata", err)
		}
		if ci, err := decodeCursorInfo(b); err == nil {
			if _, err := json.Marshal(ci); err != nil {
				t.Fatal(err)
			}
		} else if !errors.Is(err, ErrCorruptMetadata) {
			t.Fatalf("error %v does not wrap ErrCorruptMetadata", err)
		}
	})
}

func TestPositionParseFormat(t *testing.T) {
	p, err := ParsePosition("12:-1")
	must(t, err)
	if p != (Position{12, -1}) || p.String() != "12:-1" {
		t.Fatalf("parsed %v", p)
	}
	for _, bad := range []string{"", "1", "a:b", "1:2:3"} {
		if _, err := ParsePosition(bad); !errors.Is(err, ErrInvalidPosition) {
			t.Fatalf("ParsePosition(%q) = %v", bad, err)
		}
	}
}

func TestEntryCacheBoundsAndInvalidation(t *testing.T) {
	clock := newFakeClock()
	c := newEntryCache(1000, 0.5, time.Second, clock.Now)
	for i := int64(0); i < 8; i++ {
		c.insert(Position{1 + i%2, i}, make([]byte, 100), EntryMeta{})
	}
	c.insert(Position{9, 0}, make([]byte, 2000), EntryMeta{}) // larger than the cache: not kept
	if st := c.stats(); st.SizeBytes != 800 || st.Entries != 8 {
		t.Fatalf("stats %+v", st)
	}
	c.insert(Position{3, 0}, make([]byte, 300), EntryMeta{}) // 1100 > 1000: evict oldest down to 500
	if st := c.stats(); st.SizeBytes > 500 || st.Evictions == 0 {
		t.Fatalf("after overflow %+v", st)
	}
	if _, ok := c.get(Position{1, 0}); ok {
		t.Fatal("oldest entry survived eviction")
	}
	c.invalidateLedger(3)
	if _, ok := c.get(Position{3, 0}); ok {
		t.Fatal("invalidated ledger still cached")
	}
	c.invalidateLedger(42) // absent: no-op
	clock.Advance(2 * time.Second)
	c.evictByAge()
	if st := c.stats(); st.Entries != 0 || st.SizeBytes != 0 || len(c.perLedger) != 0 {
		t.Fatalf("after age eviction %+v %v", st, c.perLedger)
	}
}
