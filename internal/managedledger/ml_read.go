package managedledger

import (
	"context"
	"errors"
	"fmt"

	"github.com/magnetar-io/magnetar/internal/ledger"
)

// readerFor returns a reader of ledger id, opening it on first use. Readers stay open until
// the ledger is trimmed or the managed ledger closes. A ledger of this log is never opened
// with recovery here: the current ledger is ours, and closed ones need none.
func (ml *ManagedLedger) readerFor(ctx context.Context, id int64) (ledger.Reader, error) {
	ml.mu.Lock()
	r := ml.readers[id]
	cfg := ml.cfg
	ml.mu.Unlock()
	if r != nil {
		return r, nil
	}
	r, err := ml.openOffloaded(ctx, id)
	if r == nil && err == nil {
		r, err = ml.f.lc.Open(ctx, id, ledger.OpenOptions{Password: cfg.Password})
	}
	if err != nil {
		return nil, fmt.Errorf("managedledger: %s: opening ledger %d for reading: %w", ml.name, id, err)
	}
	ml.mu.Lock()
	defer ml.mu.Unlock()
	if old := ml.readers[id]; old != nil {
		_ = r.Close()
		return old, nil
	}
	if ml.state == stateClosed || ml.state == stateDeleted {
		_ = r.Close()
		return nil, fmt.Errorf("%w: %s", ErrClosed, ml.name)
	}
	ml.readers[id] = r
	return r, nil
}

// readPositions returns the entries at positions (ascending, each a stored entry), from the
// cache when it has them and otherwise from the ledgers. A cache miss reads a run of missing
// entries plus up to ReadAheadEntries after it in one ledger read, and caches what it read.
func (ml *ManagedLedger) readPositions(ctx context.Context, positions []Position) ([]Entry, error) {
	out := make([]Entry, 0, len(positions))
	ml.mu.Lock()
	readAhead := int64(ml.cfg.ReadAheadEntries)
	ml.mu.Unlock()
	for i := 0; i < len(positions); {
		p := positions[i]
		if e, ok := ml.f.cache.get(p); ok {
			out = append(out, e)
			i++
			continue
		}
		ml.mu.Lock()
		e, ok := ml.add.tailGetLocked(p)
		ml.mu.Unlock()
		if ok {
			out = append(out, e)
			i++
			continue
		}
		// A run of consecutive misses in one ledger.
		j := i + 1
		for j < len(positions) && positions[j].LedgerID == p.LedgerID && positions[j].EntryID == positions[j-1].EntryID+1 {
			if _, ok := ml.f.cache.get(positions[j]); ok || ml.inTail(positions[j]) {
				break
			}
			j++
		}
		last := positions[j-1].EntryID
		ml.mu.Lock()
		k := ml.indexLocked(p.LedgerID)
		ledgerLast := int64(-1)
		if k < len(ml.ledgers) && ml.ledgers[k].LedgerID == p.LedgerID {
			ledgerLast = ml.ledgers[k].Entries - 1
		}
		ml.mu.Unlock()
		if last > ledgerLast {
			return out, fmt.Errorf("%w: %s: %v is not stored (trimmed?)", ErrInvalidPosition, ml.name, positions[j-1])
		}
		readTo := min(last+ml.readAheadFor(p.LedgerID, last-p.EntryID+1, readAhead), ledgerLast)
		es, err := ml.readLedger(ctx, p.LedgerID, p.EntryID, last, readTo)
		if err != nil {
			return out, err
		}
		parse := ml.f.metaParser()
		for _, e := range es {
			pos := Position{e.LedgerID, e.EntryID}
			var meta EntryMeta
			if parse != nil {
				meta = parse(e.Data)
			}
			ml.f.cache.insert(pos, e.Data, meta)
			if e.EntryID <= last {
				out = append(out, Entry{Position: pos, Data: e.Data, Meta: meta})
			}
		}
		i = j
	}
	return out, nil
}

// readLedger reads first..readTo from a ledger, where first..need must be returned and the
// rest is read-ahead that may be cut short by the reader's LAC.
func (ml *ManagedLedger) readLedger(ctx context.Context, id, first, need, readTo int64) ([]ledger.Entry, error) {
	es, err := ml.readLedgerOnce(ctx, id, first, need, readTo)
	if err != nil && !ml.isListed(id) {
		// Trimmed while we read: say so, so that the cursor moves on instead of failing.
		return nil, fmt.Errorf("%w: %s: ledger %d was trimmed: %w", errTrimmed, ml.name, id, err)
	}
	return es, err
}

// errTrimmed marks a read of a ledger deleted by retention meanwhile.
var errTrimmed = fmt.Errorf("%w (trimmed)", ErrInvalidPosition)

func (ml *ManagedLedger) isListed(id int64) bool {
	ml.mu.Lock()
	defer ml.mu.Unlock()
	i := ml.indexLocked(id)
	return i < len(ml.ledgers) && ml.ledgers[i].LedgerID == id
}

func (ml *ManagedLedger) readLedgerOnce(ctx context.Context, id, first, need, readTo int64) ([]ledger.Entry, error) {
	r, err := ml.readerFor(ctx, id)
	if err != nil {
		return nil, err
	}
	lac := r.LastAddConfirmed()
	if readTo > lac {
		if lac, err = r.ReadLastAddConfirmed(ctx); err != nil {
			return nil, fmt.Errorf("managedledger: %s: reading LAC of ledger %d: %w", ml.name, id, err)
		}
	}
	if need > lac {
		return nil, fmt.Errorf("managedledger: %s: ledger %d: entry %d beyond the readable LAC %d: %w", ml.name, id, need, lac, ledger.ErrNoSuchEntry)
	}
	es, err := r.Read(ctx, first, min(readTo, lac))
	if err != nil {
		if errors.Is(err, ledger.ErrClosed) {
			// The reader was closed under us (ledger trimmed or managed ledger closed).
			return nil, fmt.Errorf("%w: %s: ledger %d: %w", ErrClosed, ml.name, id, err)
		}
		return nil, fmt.Errorf("managedledger: %s: reading ledger %d entries %d..%d: %w", ml.name, id, first, readTo, err)
	}
	return es, nil
}

func (ml *ManagedLedger) inTail(p Position) bool {
	ml.mu.Lock()
	defer ml.mu.Unlock()
	_, ok := ml.add.tailGetLocked(p)
	return ok
}
