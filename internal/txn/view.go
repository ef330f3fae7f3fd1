package txn

import (
	"context"
	"errors"
	"fmt"

	"github.com/magnetar-io/magnetar/internal/managedledger"
)

// View is what consumers may read of a topic's log as a read-only snapshot of it shows it
// (managedledger.Snapshot), for readers that do not own the topic: the SQL worker, which
// may run in another process. It is the transaction buffer's rule rebuilt the way a
// recovery rebuilds the buffer: the newest buffer snapshot in the topic's state log (its
// maxRead and aborted transactions), then the topic's entries after maxRead, where markers
// end transactions and the first entry of each transaction still open hides it and
// everything after it.
//
// The state log is read after the topic's snapshot was taken, so a buffer snapshot newer
// than it can only make entries of transactions that committed since visible, never an
// open or aborted one.
type View struct {
	aborted map[ID]struct{}
	limit   Position // entries at or after it are hidden (a transaction was open)
	limited bool
}

// Hidden tells whether the entry at p (info: its transaction fields, ParseEntryInfo) is
// one no consumer is given: a marker, an entry of an aborted transaction, or an entry at or
// after the first entry of a transaction still open. A nil View hides markers only.
func (v *View) Hidden(p Position, info EntryInfo) bool {
	switch {
	case info.Marker != 0:
		return true
	case v == nil:
		return false
	case v.limited && !p.Less(v.limit):
		return true
	case info.InTxn:
		_, ok := v.aborted[info.Txn]
		return ok
	}
	return false
}

// Limit is the first position hidden because a transaction is still open (ok false: no
// transaction was open).
func (v *View) Limit() (Position, bool) {
	if v == nil {
		return Position{}, false
	}
	return v.limit, v.limited
}

// ReadView builds the View of snap, a read-only snapshot of a topic's log, from the topic's
// state log in f. A topic that never saw a transaction has no state log: the View is nil
// (nothing to hide).
func ReadView(ctx context.Context, f *managedledger.Factory, snap *managedledger.Snapshot) (*View, error) {
	name := StateLogName(snap.Name())
	ok, err := f.Exists(ctx, name)
	if err != nil || !ok {
		return nil, err
	}
	st, err := f.OpenSnapshot(ctx, name)
	if errors.Is(err, managedledger.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("txn: reading the transaction state of %s: %w", snap.Name(), err)
	}
	defer func() { _ = st.Close() }()
	var last *snapshot
	err = readSnapshot(ctx, st, Position{LedgerID: -1, EntryID: -1}, func(_ Position, data []byte) error {
		r, err := decodeState(data)
		if err == nil && r.kind == stSnapshot {
			last = r.snap
		}
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("txn: reading the transaction state of %s: %w", snap.Name(), err)
	}
	if last == nil {
		return nil, nil // the state log has no snapshot yet: no transaction wrote here
	}
	v := &View{aborted: make(map[ID]struct{}, len(last.aborted))}
	for _, a := range last.aborted {
		v.aborted[a.id] = struct{}{}
	}
	open := map[ID]Position{}
	err = readSnapshot(ctx, snap, last.maxRead, func(p Position, data []byte) error {
		info := ParseEntryInfo(data)
		id := info.Txn
		switch {
		case info.Marker == MarkerTxnCommit || info.Marker == MarkerTxnAbort:
			delete(open, id)
			if info.Marker == MarkerTxnAbort {
				v.aborted[id] = struct{}{}
			}
		case info.Marker != 0 || !info.InTxn:
		default:
			_, aborted := v.aborted[id]
			if _, ok := open[id]; !ok && !aborted {
				open[id] = p
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("txn: reading %s after its transaction buffer snapshot: %w", snap.Name(), err)
	}
	for _, p := range open {
		if !v.limited || p.Less(v.limit) {
			v.limit, v.limited = p, true
		}
	}
	return v, nil
}

// readSnapshot calls fn with every entry of s after position from, in log order.
func readSnapshot(ctx context.Context, s *managedledger.Snapshot, from Position, fn func(Position, []byte) error) error {
	for _, l := range s.Ledgers() {
		first := int64(0)
		switch {
		case l.ID < from.LedgerID:
			continue
		case l.ID == from.LedgerID:
			first = from.EntryID + 1
		}
		for ; first < l.Entries; first += replayBatch {
			es, err := s.Read(ctx, l.ID, first, min(first+replayBatch, l.Entries)-1)
			if err != nil {
				return err
			}
			for _, e := range es {
				if err := fn(e.Position, e.Data); err != nil {
					return fmt.Errorf("at %s: %w", e.Position, err)
				}
			}
		}
	}
	return nil
}
