package bookieproto

import (
	"context"
	"errors"
	"time"
)

// Errors a bookie reports; the client returns them (wrapped) so callers use errors.Is.
// Each has a status code on the wire (see doc.go).
var (
	ErrNoSuchEntry  = errors.New("bookie: no such entry")
	ErrNoSuchLedger = errors.New("bookie: no such ledger")
	ErrFenced       = errors.New("bookie: ledger fenced")
	ErrUnauthorized = errors.New("bookie: wrong ledger master key")
	ErrReadOnly     = errors.New("bookie: read-only, add rejected")
	ErrCorrupt      = errors.New("bookie: entry corrupt or unreadable") // never "no such entry"
	ErrTooBusy      = errors.New("bookie: too busy")
	ErrBadRequest   = errors.New("bookie: malformed request")
	ErrServer       = errors.New("bookie: internal error")
	ErrTimeout      = errors.New("bookie: request timed out")
	ErrUnavailable  = errors.New("bookie: unreachable")
)

// AddRequest stores one entry of a ledger on one bookie.
type AddRequest struct {
	LedgerID  int64
	EntryID   int64
	MasterKey []byte // derived from the ledger password; the first add or fence records it
	LAC       int64  // the writer's last-add-confirmed, piggybacked
	Payload   []byte // opaque to the bookie (the ledger client's digest header + data)
	// Prefix, when set, is the start of the payload (Prefix then Payload are sent as one):
	// the ledger client passes its digest header here to avoid copying every entry.
	Prefix   []byte
	Recovery bool // a recovery add: allowed on a fenced ledger
}

// ReadRequest reads one entry from one bookie.
type ReadRequest struct {
	LedgerID  int64
	EntryID   int64
	MasterKey []byte // required when Fence is set
	Fence     bool   // recovery read: fence the ledger before answering (BookKeeper #2614)
}

// Entry is one stored entry as read back, with the bookie's known LAC for the ledger.
type Entry struct {
	LedgerID int64
	EntryID  int64
	LAC      int64
	Payload  []byte
}

// Client speaks the bookie protocol to any number of bookies, one pipelined connection per
// address. Safe for concurrent use. Addresses are "host:port".
type Client interface {
	// AddEntry sends an add; done is called exactly once, after the bookie's fsync covering
	// the entry (nil) or with an error. Calls for one address are sent in call order and
	// pipelined; done may run on a client goroutine and must not block for long.
	AddEntry(ctx context.Context, addr string, req AddRequest, done func(error))
	// ReadEntry reads one entry.
	ReadEntry(ctx context.Context, addr string, req ReadRequest) (Entry, error)
	// ReadRange reads entries first..last (inclusive) of a ledger in one request, stopping
	// early at maxBytes of payload or at the first missing entry (never skipping one).
	ReadRange(ctx context.Context, addr string, ledgerID, first, last int64, maxBytes int) ([]Entry, error)
	// ReadLAC returns the bookie's LAC for the ledger. With fence, it fences the ledger first
	// (later normal adds fail with ErrFenced; fencing survives restart).
	ReadLAC(ctx context.Context, addr string, ledgerID int64, fence bool, masterKey []byte) (int64, error)
	// WaitLAC long-polls: it returns when the bookie's LAC for the ledger exceeds previous,
	// or after timeout with the current LAC.
	WaitLAC(ctx context.Context, addr string, ledgerID, previous int64, timeout time.Duration) (int64, error)
	// DeleteLedger deletes the ledger's entries on the bookie (idempotent).
	DeleteLedger(ctx context.Context, addr string, ledgerID int64) error
	// Close closes every connection; pending calls fail with ErrUnavailable.
	Close() error
}
