package managedledger

import (
	"context"
	"errors"

	"github.com/magnetar-io/magnetar/internal/metadata"
)

// The read limit (transactions, internal/txn): entries of a transaction still open must not
// reach consumers, and neither may anything after them (Pulsar's max-read position). The
// transaction buffer sets the limit; cursors stop before it, as at the end of the log, and
// reads waiting at it wake when it moves. Readers that must see everything (the buffer's
// own recovery, a Kafka read_uncommitted fetch) use unlimited cursors.

// SetReadLimit hides every entry at or after limit from cursors (an exclusive bound; it
// need not name a stored entry); on=false lifts it. Raising or lifting it wakes waiting
// reads. Positions already handed out are not taken back.
func (ml *ManagedLedger) SetReadLimit(limit Position, on bool) {
	ml.mu.Lock()
	defer ml.mu.Unlock()
	wake := (ml.limited && !on) || (on && ml.limited && ml.readLimit.Less(limit))
	ml.readLimit, ml.limited = limit, on
	if wake {
		ml.notifyLocked()
	}
}

// ReadLimit is the current read limit and whether one is set.
func (ml *ManagedLedger) ReadLimit() (Position, bool) {
	ml.mu.Lock()
	defer ml.mu.Unlock()
	return ml.readLimit, ml.limited
}

// NewUnlimitedReader is NewNonDurableCursor for a reader that ignores the read limit.
func (ml *ManagedLedger) NewUnlimitedReader(start Position, inclusive bool) (*Cursor, error) {
	c, err := ml.NewNonDurableCursor(start, inclusive)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	c.unlimited = true
	c.mu.Unlock()
	return c, nil
}

// visibleLocked tells whether the cursor may read pos under the read limit. Caller holds
// c.mu and ml.mu.
func (c *Cursor) visibleLocked(pos Position) bool {
	return c.unlimited || !c.ml.limited || pos.Less(c.ml.readLimit)
}

// Exists tells whether a managed ledger called name is stored (open here or not), without
// creating it.
func (f *Factory) Exists(ctx context.Context, name string) (bool, error) {
	if _, ok := f.Get(name); ok {
		return true, nil
	}
	_, err := f.store.Get(ctx, f.mlKey(name))
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, metadata.ErrNotFound):
		return false, nil
	}
	return false, err
}
