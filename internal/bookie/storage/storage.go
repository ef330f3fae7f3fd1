package storage

import (
	"context"
	"errors"
)

// Errors of the storage layer. The bookie server maps them to protocol status codes.
var (
	ErrNoSuchEntry  = errors.New("storage: no such entry")
	ErrNoSuchLedger = errors.New("storage: no such ledger")
	ErrFenced       = errors.New("storage: ledger fenced")
	ErrUnauthorized = errors.New("storage: wrong ledger master key")
	ErrReadOnly     = errors.New("storage: read-only")
	ErrCorrupt      = errors.New("storage: entry corrupt or unreadable") // never reported as "no such entry"
	ErrClosed       = errors.New("storage: closed")
)

// Unreader is a Storage whose reads can be given back: a payload ReadEntry returned that
// the caller did not use (a range read whose budget it would have exceeded) goes back
// into the read cache, so the next read of it does not go to disk again.
type Unreader interface {
	Unread(ledgerID, entryID int64, payload []byte)
}

// Identity is a Storage with an instance identity: the id its directories' cookies carry
// (a new one whenever the directories are created empty). The bookie compares it with the
// cookie the metadata store keeps for its address, so a wiped or replaced disk cannot
// rejoin under the old address unnoticed.
type Identity interface {
	InstanceID() string
	// NewInstance reports whether the directories were empty when opened (a new disk, a
	// wiped one, or a bookie's first start).
	NewInstance() bool
}

// Storage is a bookie's ledger storage: journal, write cache, entry logs and index behind
// one interface. The disk implementation (Open) and the memory twin (NewMemory) pass the
// same conformance suite (storagetest).
type Storage interface {
	// AddEntry stores an entry. done is called exactly once: with nil only after the journal
	// fsync that covers the entry (or the write, with journalSyncData=false), otherwise with
	// an error (ErrFenced unless recovery, ErrUnauthorized, ErrReadOnly, ...). Entries are
	// journaled in call order. It blocks (backpressure) while the write cache is full.
	AddEntry(ledgerID, entryID int64, masterKey []byte, lac int64, payload []byte, recovery bool, done func(error))
	// ReadEntry returns the entry's payload, which the caller owns (no cache keeps
	// it), ErrNoSuchEntry/ErrNoSuchLedger when it
	// is absent, ErrCorrupt when its checksum fails or it cannot be read.
	ReadEntry(ledgerID, entryID int64) ([]byte, error)
	// LAC returns the highest LAC piggybacked on adds to the ledger (-1 if none).
	LAC(ledgerID int64) (int64, error)
	// WaitLAC blocks until the ledger's LAC exceeds previous or ctx is done, and returns the
	// current LAC either way.
	WaitLAC(ctx context.Context, ledgerID, previous int64) (int64, error)
	// Fence fences the ledger (creating its record if it has none), durably, before it
	// returns; later non-recovery adds fail with ErrFenced. It returns the ledger's LAC.
	Fence(ledgerID int64, masterKey []byte) (int64, error)
	// DeleteLedger forgets the ledger; its space is reclaimed by garbage collection.
	DeleteLedger(ledgerID int64) error
	// ReadOnly reports whether adds are currently rejected (disk full, write errors).
	ReadOnly() bool
	// Close flushes and releases everything.
	Close() error
}
