package managedledger

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"sort"
)

// mlInfo is the value of a managed ledger's key in the metadata store (JSON, see doc.go).
type mlInfo struct {
	Ledgers    []ledgerInfo `json:"ledgers"`
	Terminated *Position    `json:"terminatedPosition,omitempty"`
}

// ledgerInfo describes one ledger of the list. Entries and Size are final once the ledger is
// closed; for the last (open) ledger they are filled in at recovery. Timestamp is the
// creation time while open and the close time once closed, in Unix milliseconds; retention
// and the time-based backlog quota use it.
type ledgerInfo struct {
	LedgerID  int64 `json:"ledgerId"`
	Entries   int64 `json:"entries"`
	Size      int64 `json:"size"`
	Timestamp int64 `json:"timestamp"`
	// Offload is the ledger's tiered-storage state (ml_offload.go); nil = never offloaded.
	// Copy-on-write: ledgerInfo values are copied between lists, so never modify it in place.
	Offload *offloadContext `json:"offloadContext,omitempty"`
}

func encodeMLInfo(info *mlInfo) []byte {
	b, err := json.Marshal(info)
	if err != nil {
		panic(fmt.Sprintf("managedledger: encoding ledger list: %v", err)) // plain structs never fail
	}
	return b
}

func decodeMLInfo(b []byte) (*mlInfo, error) {
	var info mlInfo
	if err := json.Unmarshal(b, &info); err != nil {
		return nil, fmt.Errorf("%w: ledger list: %w", ErrCorruptMetadata, err)
	}
	prev := int64(-1)
	for _, l := range info.Ledgers {
		if l.LedgerID <= prev || l.Entries < 0 || l.Size < 0 {
			return nil, fmt.Errorf("%w: ledger list not strictly ascending or negative counts at ledger %d", ErrCorruptMetadata, l.LedgerID)
		}
		prev = l.LedgerID
	}
	return &info, nil
}

// cursorInfo is the value of a cursor's key in the metadata store (JSON, see doc.go).
type cursorInfo struct {
	// CursorsLedgerID is the cursor ledger whose last entry holds the newest state, or -1.
	CursorsLedgerID int64 `json:"cursorsLedgerId"`
	// MarkDelete repeats the snapshot's mark-delete position for humans reading etcd.
	MarkDelete Position `json:"markDeletePosition"`
	// State is the cursor state (binary, see encodeCursorState) as of this snapshot.
	State []byte `json:"state"`
	// LastActive is when the snapshot was taken, in Unix milliseconds.
	LastActive int64 `json:"lastActive"`
}

func decodeCursorInfo(b []byte) (*cursorInfo, error) {
	var ci cursorInfo
	if err := json.Unmarshal(b, &ci); err != nil {
		return nil, fmt.Errorf("%w: cursor info: %w", ErrCorruptMetadata, err)
	}
	return &ci, nil
}

// cursorState is what a cursor persists: its mark-delete position and the individually
// acknowledged spans after it.
type cursorState struct {
	MarkDelete Position
	Acked      *RangeSet
	// Props are the cursor's properties (MarkDeleteWithProperties), nil when none.
	Props map[string]int64
	// BatchAcks holds the partly acknowledged batch entries: per entry, a bitset whose set
	// bits are the batch members not yet acknowledged.
	BatchAcks map[Position][]uint64
}

const (
	cursorStateVersion = 1
	// cursorStateVersionExt is version 1 followed by the cursor's properties and its partly
	// acknowledged batches; states with neither are still written as version 1.
	cursorStateVersionExt = 2
	// maxCursorPropKey bounds a property name, so a corrupt length cannot allocate much.
	maxCursorPropKey = 4096
)

// encodeCursorState writes the state in the compact binary form of doc.go, keeping at most
// maxSpans spans (the lowest ones: losing the highest only causes redelivery).
func encodeCursorState(md Position, acked *RangeSet, maxSpans int) []byte {
	return encodeCursorStateProps(md, acked, maxSpans, nil)
}

// encodeCursorStateProps is encodeCursorState with the cursor's properties.
func encodeCursorStateProps(md Position, acked *RangeSet, maxSpans int, props map[string]int64) []byte {
	return encodeCursorStateFull(md, acked, maxSpans, props, nil)
}

// encodeCursorStateFull writes the whole state: version 1 when the cursor has neither
// properties nor partly acknowledged batches, else version 2 with both sections. Keys and
// positions are written sorted, so equal states encode to equal bytes. At most maxSpans
// spans (and as many batches) are kept, the lowest first: losing the highest only causes
// redelivery.
func encodeCursorStateFull(md Position, acked *RangeSet, maxSpans int, props map[string]int64, batches map[Position][]uint64) []byte {
	spans := acked.spans
	if len(spans) > maxSpans {
		spans = spans[:maxSpans]
	}
	ext := len(props) > 0 || len(batches) > 0
	b := make([]byte, 0, 1+2*binary.MaxVarintLen64+binary.MaxVarintLen64+len(spans)*6)
	if ext {
		b = append(b, cursorStateVersionExt)
	} else {
		b = append(b, cursorStateVersion)
	}
	b = binary.AppendVarint(b, md.LedgerID)
	b = binary.AppendVarint(b, md.EntryID)
	b = binary.AppendUvarint(b, uint64(len(spans)))
	prevL, prevEnd := md.LedgerID, md.EntryID
	for _, s := range spans {
		dl := s.LedgerID - prevL
		b = binary.AppendUvarint(b, uint64(dl))
		if dl == 0 {
			b = binary.AppendUvarint(b, uint64(s.First-prevEnd-1))
		} else {
			b = binary.AppendUvarint(b, uint64(s.First))
		}
		b = binary.AppendUvarint(b, uint64(s.Last-s.First))
		prevL, prevEnd = s.LedgerID, s.Last
	}
	if !ext {
		return b
	}
	keys := make([]string, 0, len(props))
	for k := range props {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	b = binary.AppendUvarint(b, uint64(len(keys)))
	for _, k := range keys {
		b = binary.AppendUvarint(b, uint64(len(k)))
		b = append(b, k...)
		b = binary.AppendVarint(b, props[k])
	}
	return appendBatchAcks(b, batches, maxSpans)
}

// maxCoord bounds decoded ledger and entry ids so that arithmetic on them cannot overflow.
const maxCoord = int64(1) << 62

// decodeCursorState parses encodeCursorState's output. Any malformed input is an error
// wrapping ErrCorruptMetadata; it never panics and never allocates more than the input
// justifies.
func decodeCursorState(b []byte) (cursorState, error) {
	bad := func(what string) (cursorState, error) {
		return cursorState{}, fmt.Errorf("%w: cursor state: %s", ErrCorruptMetadata, what)
	}
	if len(b) == 0 {
		return bad("empty")
	}
	version := b[0]
	if version != cursorStateVersion && version != cursorStateVersionExt {
		return bad(fmt.Sprintf("unknown version %d", b[0]))
	}
	b = b[1:]
	varint := func() (int64, bool) {
		v, n := binary.Varint(b)
		if n <= 0 {
			return 0, false
		}
		b = b[n:]
		return v, true
	}
	uvarint := func() (int64, bool) {
		v, n := binary.Uvarint(b)
		if n <= 0 || v >= uint64(maxCoord) {
			return 0, false
		}
		b = b[n:]
		return int64(v), true
	}
	ml, ok1 := varint()
	me, ok2 := varint()
	if !ok1 || !ok2 || ml < -1 || me < -1 || ml >= maxCoord || me >= maxCoord {
		return bad("bad mark-delete position")
	}
	n, ok := uvarint()
	if !ok || n > int64(len(b))/3 {
		return bad("bad span count")
	}
	st := cursorState{MarkDelete: Position{ml, me}, Acked: &RangeSet{spans: make([]Span, 0, n)}}
	prevL, prevEnd := ml, me
	for i := int64(0); i < n; i++ {
		dl, ok1 := uvarint()
		off, ok2 := uvarint()
		ln, ok3 := uvarint()
		if !ok1 || !ok2 || !ok3 {
			return bad(fmt.Sprintf("truncated span %d", i))
		}
		s := Span{LedgerID: prevL + dl}
		if dl == 0 {
			s.First = prevEnd + 1 + off
		} else {
			s.First = off
		}
		s.Last = s.First + ln
		if s.LedgerID >= maxCoord || s.Last >= maxCoord || s.First < 0 {
			return bad(fmt.Sprintf("span %d out of range", i))
		}
		r := st.Acked
		if k := len(r.spans) - 1; k >= 0 && r.spans[k].LedgerID == s.LedgerID && r.spans[k].Last+1 == s.First {
			r.spans[k].Last = s.Last // adjacent spans from a foreign encoder: merge
		} else {
			r.spans = append(r.spans, s)
		}
		r.count += s.Count()
		if r.count >= maxCoord {
			return bad("too many acknowledged entries")
		}
		prevL, prevEnd = s.LedgerID, s.Last
	}
	if version == cursorStateVersionExt {
		np, ok := uvarint()
		if !ok || np > int64(len(b))/2 {
			return bad("bad property count")
		}
		if np > 0 {
			st.Props = make(map[string]int64, np)
		}
		for i := int64(0); i < np; i++ {
			kl, ok := uvarint()
			if !ok || kl > maxCursorPropKey || kl > int64(len(b)) {
				return bad(fmt.Sprintf("bad property %d name length", i))
			}
			k := string(b[:kl])
			b = b[kl:]
			v, ok := varint()
			if !ok {
				return bad(fmt.Sprintf("truncated property %d", i))
			}
			if _, dup := st.Props[k]; dup {
				return bad(fmt.Sprintf("duplicate property %q", k))
			}
			st.Props[k] = v
		}
		rest, batches, err := decodeBatchAcks(b)
		if err != nil {
			return cursorState{}, err
		}
		b = rest
		if len(batches) > 0 {
			st.BatchAcks = batches
		}
	}
	if len(b) != 0 {
		return bad("trailing bytes")
	}
	return st, nil
}
