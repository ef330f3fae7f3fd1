package ledger

import (
	"context"
	"errors"
)

// Errors of the ledger client.
var (
	ErrFenced             = errors.New("ledger: fenced by another writer")
	ErrNoSuchLedger       = errors.New("ledger: no such ledger")
	ErrNoSuchEntry        = errors.New("ledger: no such entry")
	ErrClosed             = errors.New("ledger: closed")
	ErrNotEnoughBookies   = errors.New("ledger: not enough writable bookies")
	ErrCorrupt            = errors.New("ledger: entry failed its digest check")
	ErrRecoveryIncomplete = errors.New("ledger: recovery could not decide an entry") // never truncate on doubt
	ErrBadArgument        = errors.New("ledger: bad argument")
	ErrUnauthorized       = errors.New("ledger: wrong ledger password") // Open with another password
)

// DigestType is how each entry is checksummed by the writer and verified by readers.
type DigestType int

// Digest types (BookKeeper's names).
const (
	DigestCRC32C DigestType = iota
	DigestDummy
)

// CreateOptions configures a new ledger. EnsembleSize >= WriteQuorum >= AckQuorum >= 1.
type CreateOptions struct {
	EnsembleSize   int
	WriteQuorum    int
	AckQuorum      int
	Digest         DigestType
	Password       []byte
	CustomMetadata map[string]string
}

// OpenOptions configures opening an existing ledger for reading.
type OpenOptions struct {
	// Recovery fences the ledger on its bookies, recovers entries past the LAC and closes it,
	// so that a writer that still has it open can no longer append.
	Recovery bool
	Password []byte
}

// Entry is one entry read back.
type Entry struct {
	LedgerID int64
	EntryID  int64
	Data     []byte
}

// Client creates, opens and deletes ledgers. Safe for concurrent use.
type Client interface {
	Create(ctx context.Context, opts CreateOptions) (Writer, error)
	Open(ctx context.Context, ledgerID int64, opts OpenOptions) (Reader, error)
	Delete(ctx context.Context, ledgerID int64) error
	Close() error
}

// Writer appends to a ledger it created. Safe for concurrent use; appends are ordered by call.
type Writer interface {
	ID() int64
	// AppendAsync queues data as the next entry. done is called once per call, in entry
	// order, with the entry id when AckQuorum bookies have it durably and every earlier entry
	// is acknowledged, or with an error (after which every later append fails too). The
	// writer sends data without copying it, also on a later ensemble change: the caller
	// must not modify it afterwards.
	AppendAsync(data []byte, done func(entryID int64, err error))
	// Append is AppendAsync waiting for the result.
	Append(ctx context.Context, data []byte) (int64, error)
	// LastAddConfirmed is the highest entry id acknowledged to the caller (-1 if none).
	LastAddConfirmed() int64
	// Close waits for pending appends, then records the last entry id in metadata.
	Close(ctx context.Context) error
}

// Reader reads a ledger, open or closed.
type Reader interface {
	ID() int64
	// LastAddConfirmed is the highest readable entry id as last learned (-1 if none); for a
	// closed ledger, its last entry id.
	LastAddConfirmed() int64
	IsClosed() bool
	// Read returns entries first..last inclusive (last <= LastAddConfirmed).
	Read(ctx context.Context, first, last int64) ([]Entry, error)
	// ReadLastAddConfirmed asks the bookies for the current LAC and returns it.
	ReadLastAddConfirmed(ctx context.Context) (int64, error)
	// WaitLastAddConfirmed long-polls until the LAC exceeds previous or ctx is done. On a
	// closed ledger whose last entry is not above previous it returns ErrClosed at once.
	WaitLastAddConfirmed(ctx context.Context, previous int64) (int64, error)
	Close() error
}
