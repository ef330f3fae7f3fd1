package topics

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/magnetar-io/magnetar/internal/managedledger"
	"github.com/magnetar-io/magnetar/internal/wire"
)

// Position is an entry's place in a topic log: (ledger id, entry id), ordered by both. It is
// the managed ledger's type, so entries pass from storage to front ends without conversion.
type Position = managedledger.Position

// Entry is one stored entry: its broker entry metadata block (index.go) followed by the
// exact bytes of a Pulsar SEND from the 0x0e01 magic on (shared with caches: never
// modified; wire.ParseEntry skips the block) and its parsed metadata.
type Entry = managedledger.Entry

// EntryMeta is what dispatch needs from an entry's metadata, parsed once (ParseEntryMeta).
type EntryMeta = managedledger.EntryMeta

var (
	// Earliest and Latest are the special start positions: before the oldest stored entry
	// and after the newest, (-1,-1) and (2^63-1, 2^63-1) as the Pulsar protocol has them.
	Earliest = managedledger.Earliest
	Latest   = managedledger.Latest
)

// The topic service reaches its logs through the managed ledger directly. topicLog and
// logCursor are thin wrappers that classify its errors for the front ends (mlErr) and keep
// the dispatch code short; they are not a seam (an in-memory twin for tests is the ledger's,
// internal/ledger/memledger, under a real managed ledger).

// mlErr classifies managed-ledger errors into the classes front ends translate.
func mlErr(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, managedledger.ErrTerminated), errors.Is(err, managedledger.ErrNoMoreEntries):
		return fmt.Errorf("%w: %w", wire.ErrTopicTerminated, err)
	case errors.Is(err, managedledger.ErrTooBusy):
		return fmt.Errorf("%w: %w", wire.ErrTooManyRequests, err)
	case errors.Is(err, managedledger.ErrBacklogQuotaExceeded):
		return fmt.Errorf("%w: %w", wire.ErrQuotaExceeded, err)
	case errors.Is(err, managedledger.ErrFenced), errors.Is(err, managedledger.ErrClosed):
		return fmt.Errorf("%w: %w", wire.ErrServiceNotReady, err)
	case errors.Is(err, managedledger.ErrCorruptMetadata):
		return fmt.Errorf("%w: %w", wire.ErrMetadata, err)
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return err
	case errors.Is(err, managedledger.ErrInvalidPosition):
		// Still a persistence error on the wire; the admin API answers it 400.
		return fmt.Errorf("%w: %w: %w", wire.ErrPersistence, ErrInvalidPosition, err)
	}
	return fmt.Errorf("%w: %w", wire.ErrPersistence, err)
}

// openLog opens (creating if needed) the log of topic name, configured by its policies
// (policies.go:logConfig).
func (s *Service) openLog(ctx context.Context, name Name) (*topicLog, error) {
	cfg, err := s.logConfig(ctx, name)
	if err != nil {
		return nil, err
	}
	ml, err := s.ledgers.Open(ctx, name.ManagedLedgerName(), cfg)
	if err != nil {
		return nil, mlErr(err)
	}
	l := &topicLog{ml: ml}
	if err := l.recoverIndex(ctx); err != nil {
		cctx, cancel := context.WithTimeout(context.Background(), opTimeout)
		_ = ml.Close(cctx)
		cancel()
		return nil, err
	}
	return l, nil
}

// topicLog is a persistent topic's append-only log; append (index.go) prefixes each entry
// with its broker entry metadata.
type topicLog struct {
	ml  *managedledger.ManagedLedger
	idx entryIndex
	// lastPublish is the broker timestamp (Unix ms) of the newest stored entry, 0 before
	// the first: recovered from the last entry at load, set by each append.
	lastPublish atomic.Int64
}

// lastConfirmed is the newest durable entry, or entry -1 when the log is empty.
func (l *topicLog) lastConfirmed() Position {
	lc := l.ml.LastConfirmedEntry()
	if lc.EntryID < 0 || l.ml.NumberOfEntries() == 0 {
		return Position{LedgerID: -1, EntryID: -1} // empty, or everything trimmed
	}
	return lc
}

// openCursor opens (creating at the earliest or latest entry if new) the durable cursor
// called name.
func (l *topicLog) openCursor(ctx context.Context, name string, initialEarliest bool) (*logCursor, error) {
	init := managedledger.InitialPositionLatest
	if initialEarliest {
		init = managedledger.InitialPositionEarliest
	}
	c, err := l.ml.OpenCursor(ctx, name, init)
	if err != nil {
		return nil, mlErr(err)
	}
	return &logCursor{c}, nil
}

// newReader returns a non-durable cursor whose first read returns the entry at start (or
// the first entry after it if start is not stored); Earliest and Latest are allowed.
func (l *topicLog) newReader(start Position) (*logCursor, error) {
	c, err := l.ml.NewNonDurableCursor(start, true)
	if err != nil {
		return nil, mlErr(err)
	}
	return &logCursor{c}, nil
}

// deleteCursor removes a durable cursor and its persisted state; a missing one is no error.
func (l *topicLog) deleteCursor(ctx context.Context, name string) error {
	err := l.ml.DeleteCursor(ctx, name)
	if errors.Is(err, managedledger.ErrCursorNotFound) {
		return nil
	}
	return mlErr(err)
}

// readAt reads one entry whatever the acknowledgements, through a short-lived reader.
func (l *topicLog) readAt(ctx context.Context, p Position) (Entry, error) {
	c, err := l.ml.NewNonDurableCursor(p, true)
	if err != nil {
		return Entry{}, mlErr(err)
	}
	defer func() { _ = c.Close(ctx) }()
	es, err := c.ReadEntries(ctx, 1, 0)
	if err != nil {
		return Entry{}, mlErr(err)
	}
	if len(es) == 0 || es[0].Position != p {
		return Entry{}, fmt.Errorf("%w: entry %s is not stored", wire.ErrPersistence, p)
	}
	return es[0], nil
}

func (l *topicLog) close(ctx context.Context) error   { return mlErr(l.ml.Close(ctx)) }
func (l *topicLog) destroy(ctx context.Context) error { return mlErr(l.ml.Delete(ctx)) }
func (l *topicLog) terminated() bool                  { return l.ml.IsTerminated() }
func (l *topicLog) storageSize() int64                { return l.ml.TotalSize() }

// terminate refuses further appends and returns the last entry's position.
func (l *topicLog) terminate(ctx context.Context) (Position, error) {
	p, err := l.ml.Terminate(ctx)
	return p, mlErr(err)
}

// subscriptionCursors are the durable cursors of subscriptions (not the broker's own).
func (l *topicLog) subscriptionCursors() []*managedledger.Cursor {
	var out []*managedledger.Cursor
	for _, c := range l.ml.Cursors() {
		if c.IsDurable() && !isSystemCursor(c.Name()) {
			out = append(out, c)
		}
	}
	return out
}

// cursorNames lists the durable cursors of subscriptions.
func (l *topicLog) cursorNames() []string {
	var out []string
	for _, c := range l.subscriptionCursors() {
		out = append(out, c.Name())
	}
	return out
}

// logCursor tracks a subscription's read position and acknowledgements.
type logCursor struct {
	c *managedledger.Cursor
}

// read returns up to max entries from the read position on, waiting until at least one is
// available or ctx ends. Entries already acknowledged are skipped.
func (c *logCursor) read(ctx context.Context, max int) ([]Entry, error) {
	es, err := c.c.ReadEntriesOrWait(ctx, max, 0)
	return es, mlErr(err)
}

// readPositions reads the given entries again (skipping acknowledged ones) without moving
// the read position.
func (c *logCursor) readPositions(ctx context.Context, ps []Position) ([]Entry, error) {
	es, err := c.c.ReadPositions(ctx, ps)
	return es, mlErr(err)
}

// seek moves the read position so the next read starts at p (no acks change).
func (c *logCursor) seek(p Position) { c.c.Seek(p) }

// rewind moves the read position back to the first entry after the mark-delete position,
// so every unacknowledged entry is read again.
func (c *logCursor) rewind() { c.c.Rewind() }

// markDelete acknowledges every entry up to and including p (cumulative ack).
func (c *logCursor) markDelete(_ context.Context, p Position) error {
	return mlErr(c.c.MarkDelete(p))
}

// delete acknowledges individual entries.
func (c *logCursor) delete(_ context.Context, ps []Position) error {
	return mlErr(c.c.Delete(ps...))
}

// isAcked tells whether p is acknowledged (at or before mark-delete, or deleted).
func (c *logCursor) isAcked(p Position) bool { return c.c.IsAcknowledged(p) }

// backlog is the number of unacknowledged entries.
func (c *logCursor) backlog() int64 { return c.c.Backlog() }

// markDeletePosition is the newest position up to which everything is acknowledged.
func (c *logCursor) markDeletePosition() Position { return c.c.MarkDeletePosition() }

// resetTo makes p the next entry delivered and forgets acknowledgements from p on (seek of
// a subscription).
func (c *logCursor) resetTo(ctx context.Context, p Position) error {
	return mlErr(c.c.ResetCursor(ctx, p))
}

// resetToTime is resetTo the first entry published at or after t.
func (c *logCursor) resetToTime(ctx context.Context, t time.Time) error {
	return mlErr(c.c.ResetToPublishTime(ctx, t, entryPublishTime))
}

// close flushes a durable cursor's state; errors are logged by the managed ledger and the
// state is persisted again at the next flush.
func (c *logCursor) close() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_ = c.c.Close(ctx)
}

// entryPublishTime reads the publish time of a stored entry.
func entryPublishTime(data []byte) (time.Time, error) {
	e, err := wire.ParseEntry(data, false)
	if err != nil {
		return time.Time{}, err
	}
	md, err := wire.ParseMetadata(e.Metadata)
	if err != nil {
		return time.Time{}, err
	}
	return time.UnixMilli(int64(md.GetPublishTime())), nil
}
