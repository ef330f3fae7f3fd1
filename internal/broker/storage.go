package broker

import (
	"context"
	"math"
	"strconv"
	"time"
)

// position is an entry's place in a topic log: (ledger id, entry id), ordered by both.
type position struct {
	ledger, entry int64
}

var (
	// earliest and latest are the protocol's special start ids: (-1,-1) and (2^63-1, 2^63-1).
	earliest = position{-1, -1}
	latest   = position{math.MaxInt64, math.MaxInt64}
)

func (p position) less(q position) bool {
	return p.ledger < q.ledger || (p.ledger == q.ledger && p.entry < q.entry)
}

func (p position) String() string {
	return strconv.FormatInt(p.ledger, 10) + ":" + strconv.FormatInt(p.entry, 10)
}

// logEntry is one stored entry: the exact bytes of a SEND from the 0x0e01 magic on.
type logEntry struct {
	pos  position
	data []byte // shared with caches: never modified
}

// logStorage opens topic logs. The production implementation is the managed ledger
// (storage_ml.go); the seam exists so the broker's dispatch logic reads as what it needs
// from storage, in one place.
type logStorage interface {
	// open returns the log called name, creating it if needed.
	open(ctx context.Context, name string) (topicLog, error)
}

// topicLog is a persistent topic's append-only log.
type topicLog interface {
	// append stores data (which the log keeps; never modified afterwards) and calls done
	// once it is durable, or with an error. Callbacks come in append order. An error
	// returned by append itself means done is never called.
	append(data []byte, done func(position, error)) error
	// lastConfirmed is the newest durable entry, or entry -1 when the log is empty.
	lastConfirmed() position
	// openCursor opens (creating at initial if new) the durable cursor called name.
	openCursor(ctx context.Context, name string, initialEarliest bool) (logCursor, error)
	// newReader returns a non-durable cursor whose first read returns the entry at start
	// (or the first entry after it if start is not stored); earliest and latest are allowed.
	newReader(ctx context.Context, start position) (logCursor, error)
	// deleteCursor removes a durable cursor and its persisted state.
	deleteCursor(ctx context.Context, name string) error
	// readAt reads one entry by position.
	readAt(ctx context.Context, p position) (logEntry, error)
	close(ctx context.Context) error
	// destroy deletes the log, its cursors and its ledgers.
	destroy(ctx context.Context) error
	// storageSize is the bytes stored.
	storageSize() int64
	// terminate refuses further appends and returns the last entry's position.
	terminate(ctx context.Context) (position, error)
	// terminated tells whether the log was terminated.
	terminated() bool
	// cursorNames lists the durable cursors.
	cursorNames() ([]string, error)
}

// logCursor tracks a subscription's read position and acknowledgements.
type logCursor interface {
	// read returns up to max entries from the read position on, waiting until at least one
	// is available or ctx ends. Entries already acknowledged are skipped.
	read(ctx context.Context, max int) ([]logEntry, error)
	// readPositions reads the given entries again (skipping acknowledged ones) without
	// moving the read position.
	readPositions(ctx context.Context, ps []position) ([]logEntry, error)
	// seek moves the read position so the next read starts at p (no acks change).
	seek(p position)
	// rewind moves the read position back to the first entry after the mark-delete
	// position, so every unacknowledged entry is read again.
	rewind()
	// markDelete acknowledges every entry up to and including p (cumulative ack).
	markDelete(ctx context.Context, p position) error
	// delete acknowledges individual entries.
	delete(ctx context.Context, ps []position) error
	// isAcked tells whether p is acknowledged (at or before mark-delete, or deleted).
	isAcked(p position) bool
	// markDeletePosition is the newest position up to which everything is acknowledged.
	markDeletePosition() position
	// resetTo makes p the next entry delivered and forgets acknowledgements from p on
	// (seek of a subscription).
	resetTo(ctx context.Context, p position) error
	// resetToTime is resetTo the first entry published at or after t.
	resetToTime(ctx context.Context, t time.Time) error
	// backlog is the number of unacknowledged entries.
	backlog() int64
	// ackBatch records a partial acknowledgement of a batch entry (remaining: a set bit per
	// member still unacknowledged) and reports whether the entry is now fully acknowledged.
	ackBatch(p position, remaining []uint64) (bool, error)
	// batchAckSet is the members of a partly acknowledged entry still unacknowledged, or nil.
	batchAckSet(p position) []uint64
	// close releases the cursor (durable state stays).
	close()
}
