package managedledger

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Position is the place of one entry in a managed ledger: the ledger that holds it and the
// entry id inside that ledger. Positions are totally ordered by (LedgerID, EntryID) because
// ledger ids of one managed ledger only grow.
//
// EntryID -1 means "before the first entry of LedgerID"; a cursor whose mark-delete position
// is (L, -1) has consumed nothing of L yet. Position{L, n} where n is the number of entries of
// the last ledger is the position the next add will take when no rollover happens first.
type Position struct {
	LedgerID int64 `json:"ledgerId"`
	EntryID  int64 `json:"entryId"`
}

// Special start positions for cursors; they are resolved against the ledger list when used.
var (
	// Earliest is before the oldest entry still stored.
	Earliest = Position{LedgerID: -1, EntryID: -1}
	// Latest is after the newest entry confirmed so far.
	Latest = Position{LedgerID: math.MaxInt64, EntryID: math.MaxInt64}
)

// Compare returns -1, 0 or +1 as p sorts before, equal to or after q.
func (p Position) Compare(q Position) int {
	switch {
	case p.LedgerID < q.LedgerID:
		return -1
	case p.LedgerID > q.LedgerID:
		return 1
	case p.EntryID < q.EntryID:
		return -1
	case p.EntryID > q.EntryID:
		return 1
	}
	return 0
}

// Less reports p < q.
func (p Position) Less(q Position) bool { return p.Compare(q) < 0 }

// String formats the position as Pulsar does: "ledgerId:entryId".
func (p Position) String() string {
	return strconv.FormatInt(p.LedgerID, 10) + ":" + strconv.FormatInt(p.EntryID, 10)
}

// ParsePosition parses "ledgerId:entryId".
func ParsePosition(s string) (Position, error) {
	l, e, ok := strings.Cut(s, ":")
	if !ok {
		return Position{}, fmt.Errorf("%w: position %q is not ledgerId:entryId", ErrInvalidPosition, s)
	}
	lid, err1 := strconv.ParseInt(l, 10, 64)
	eid, err2 := strconv.ParseInt(e, 10, 64)
	if err1 != nil || err2 != nil {
		return Position{}, fmt.Errorf("%w: position %q is not ledgerId:entryId", ErrInvalidPosition, s)
	}
	return Position{LedgerID: lid, EntryID: eid}, nil
}

func minPos(a, b Position) Position {
	if a.Less(b) {
		return a
	}
	return b
}

func maxPos(a, b Position) Position {
	if b.Less(a) {
		return a
	}
	return b
}

// Entry is one entry of a managed ledger. Data is shared with the entry cache and other
// readers: callers must not modify it.
type Entry struct {
	Position Position
	Data     []byte
	// Meta is what the layer above knew about the entry when it added it, or what the
	// factory's meta parser (Factory.SetMetaParser) found when the entry was read from a
	// ledger; zero (Parsed false) when neither is known.
	Meta EntryMeta
}

// EntryMeta is what the topic layer needs from an entry's own metadata on every dispatch
// (its message count, routing key, deliver-at and publish time). It is parsed once, when the
// entry is added (AddEntryMeta) or first read from a ledger, and kept with the entry in the
// cache, so a reader never parses the entry again. The managed ledger does not interpret it.
type EntryMeta struct {
	// Parsed tells whether the fields below were filled in.
	Parsed bool
	// Batch tells whether the entry is a batch (of Count messages; a batch may hold one).
	Batch bool
	// Count is the number of messages in the entry, at least 1.
	Count int
	// Key is the routing key (Pulsar: ordering_key, else partition_key), "" for none.
	Key string
	// DeliverAt is the time before which the entry must not be dispatched (Unix ms), 0 for
	// none; PublishTime is when the producer published it (Unix ms).
	DeliverAt, PublishTime int64
	// InTxn tells the entry belongs to transaction (TxnMost, TxnLeast); Marker is its marker
	// type (0: a message; transaction markers are never dispatched: internal/txn).
	InTxn             bool
	TxnMost, TxnLeast uint64
	Marker            int32
}

// InitialPosition says where a new durable cursor starts.
type InitialPosition int

// Initial positions of a new subscription (Pulsar's InitialPosition).
const (
	InitialPositionLatest InitialPosition = iota
	InitialPositionEarliest
)
