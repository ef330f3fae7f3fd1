package broker

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/magnetar-io/magnetar/internal/managedledger"
	"github.com/magnetar-io/magnetar/internal/wire"
)

// mlStorage adapts the managed ledger factory to logStorage.
type mlStorage struct {
	f *managedledger.Factory
}

func (s mlStorage) open(ctx context.Context, name string) (topicLog, error) {
	ml, err := s.f.Open(ctx, name, s.f.DefaultConfig())
	if err != nil {
		return nil, mlErr(err)
	}
	return mlLog{ml}, nil
}

// mlErr classifies managed-ledger errors for the protocol edge.
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
	}
	return fmt.Errorf("%w: %w", wire.ErrPersistence, err)
}

func toML(p position) managedledger.Position {
	return managedledger.Position{LedgerID: p.ledger, EntryID: p.entry}
}

func fromML(p managedledger.Position) position { return position{p.LedgerID, p.EntryID} }

func fromMLEntries(es []managedledger.Entry) []logEntry {
	out := make([]logEntry, len(es))
	for i, e := range es {
		out[i] = logEntry{pos: fromML(e.Position), data: e.Data}
	}
	return out
}

type mlLog struct {
	ml *managedledger.ManagedLedger
}

func (l mlLog) append(data []byte, done func(position, error)) error {
	return mlErr(l.ml.AddEntry(data, func(p managedledger.Position, err error) {
		done(fromML(p), mlErr(err))
	}))
}

func (l mlLog) lastConfirmed() position {
	lc := l.ml.LastConfirmedEntry()
	if lc.EntryID < 0 || l.ml.NumberOfEntries() == 0 {
		return position{-1, -1} // empty, or everything trimmed
	}
	return fromML(lc)
}

func (l mlLog) openCursor(ctx context.Context, name string, initialEarliest bool) (logCursor, error) {
	init := managedledger.InitialPositionLatest
	if initialEarliest {
		init = managedledger.InitialPositionEarliest
	}
	c, err := l.ml.OpenCursor(ctx, name, init)
	if err != nil {
		return nil, mlErr(err)
	}
	return mlCursor{c}, nil
}

func (l mlLog) newReader(_ context.Context, start position) (logCursor, error) {
	var p managedledger.Position
	switch start {
	case earliest:
		p = managedledger.Earliest
	case latest:
		p = managedledger.Latest
	default:
		p = toML(start)
	}
	c, err := l.ml.NewNonDurableCursor(p, true)
	if err != nil {
		return nil, mlErr(err)
	}
	return mlCursor{c}, nil
}

func (l mlLog) deleteCursor(ctx context.Context, name string) error {
	err := l.ml.DeleteCursor(ctx, name)
	if errors.Is(err, managedledger.ErrCursorNotFound) {
		return nil
	}
	return mlErr(err)
}

// readAt reads one entry whatever the acknowledgements, through a short-lived reader.
func (l mlLog) readAt(ctx context.Context, p position) (logEntry, error) {
	c, err := l.ml.NewNonDurableCursor(toML(p), true)
	if err != nil {
		return logEntry{}, mlErr(err)
	}
	defer func() { _ = c.Close(ctx) }()
	es, err := c.ReadEntries(ctx, 1, 0)
	if err != nil {
		return logEntry{}, mlErr(err)
	}
	if len(es) == 0 || fromML(es[0].Position) != p {
		return logEntry{}, fmt.Errorf("%w: entry %s is not stored", wire.ErrPersistence, p)
	}
	return logEntry{pos: p, data: es[0].Data}, nil
}

func (l mlLog) close(ctx context.Context) error   { return mlErr(l.ml.Close(ctx)) }
func (l mlLog) destroy(ctx context.Context) error { return mlErr(l.ml.Delete(ctx)) }
func (l mlLog) terminated() bool                  { return l.ml.IsTerminated() }

func (l mlLog) cursorNames() ([]string, error) {
	var out []string
	for _, c := range l.ml.Cursors() {
		if isSystemCursor(c.Name()) {
			continue
		}
		out = append(out, c.Name())
	}
	return out, nil
}

func (l mlLog) terminate(ctx context.Context) (position, error) {
	p, err := l.ml.Terminate(ctx)
	return fromML(p), mlErr(err)
}

func (l mlLog) storageSize() int64 { return l.ml.TotalSize() }

type mlCursor struct {
	c *managedledger.Cursor
}

func (c mlCursor) read(ctx context.Context, max int) ([]logEntry, error) {
	es, err := c.c.ReadEntriesOrWait(ctx, max, 0)
	if err != nil {
		return nil, mlErr(err)
	}
	return fromMLEntries(es), nil
}

func (c mlCursor) readPositions(ctx context.Context, ps []position) ([]logEntry, error) {
	mps := make([]managedledger.Position, len(ps))
	for i, p := range ps {
		mps[i] = toML(p)
	}
	es, err := c.c.ReadPositions(ctx, mps)
	if err != nil {
		return nil, mlErr(err)
	}
	return fromMLEntries(es), nil
}

func (c mlCursor) seek(p position) { c.c.Seek(toML(p)) }
func (c mlCursor) rewind()         { c.c.Rewind() }

func (c mlCursor) markDelete(_ context.Context, p position) error {
	return mlErr(c.c.MarkDelete(toML(p)))
}

func (c mlCursor) delete(_ context.Context, ps []position) error {
	mps := make([]managedledger.Position, len(ps))
	for i, p := range ps {
		mps[i] = toML(p)
	}
	return mlErr(c.c.Delete(mps...))
}

func (c mlCursor) isAcked(p position) bool      { return c.c.IsAcknowledged(toML(p)) }
func (c mlCursor) backlog() int64               { return c.c.Backlog() }
func (c mlCursor) markDeletePosition() position { return fromML(c.c.MarkDeletePosition()) }

func (c mlCursor) resetTo(ctx context.Context, p position) error {
	return mlErr(c.c.ResetCursor(ctx, toML(p)))
}

func (c mlCursor) resetToTime(ctx context.Context, t time.Time) error {
	return mlErr(c.c.ResetToPublishTime(ctx, t, entryPublishTime))
}

// close flushes a durable cursor's state; errors are logged by the managed ledger and the
// state is persisted again at the next flush.
func (c mlCursor) close() {
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
