package storage

import (
	"fmt"
	"math"

	"github.com/magnetar-io/magnetar/internal/bookie/storage/journal"
)

// Limbo. Journal replay skips a corrupt record found in the middle of a file (a crash
// tears only the tail, so this is media damage). The entry in it was acknowledged, and
// answering "no such entry" for it would let ledger recovery conclude the entry was never
// written and truncate the ledger (BookKeeper's limbo state exists for the same reason).
// So the ledgers the damage may belong to go into limbo: reading a missing entry of theirs
// up to the limbo bound is ErrCorrupt, which the ledger client treats as "ask another
// replica" and recovery as doubt. Entries above the bound, and every entry that is
// present, read as usual.
//
// Attribution (journal.Damage): when the damaged bytes still frame one add record whose
// ledger has other records in the file, only that ledger is in limbo, up to that entry;
// otherwise every ledger with records in the file is, with no bound. The state is stored
// in the ledger's index metadata, so it survives restarts, and ends with the ledger's
// deletion.

// markLimbo puts the ledgers the damage may have hit into limbo; the flush after replay
// persists them (they are marked dirty).
func (d *Disk) markLimbo(damage []journal.Damage) {
	d.lmu.Lock()
	defer d.lmu.Unlock()
	defer func() { d.m.limboLedgers.Set(float64(d.limboCountLocked())) }()
	mark := func(id, upTo int64) {
		st := d.ledgers[id]
		if st == nil || st.deleted {
			return
		}
		if st.limbo {
			st.limboUpTo = max(st.limboUpTo, upTo)
		} else {
			st.limbo, st.limboUpTo = true, upTo
		}
		d.dirty[id] = st
		d.log.Error("ledger in limbo: journal damage may have lost one of its entries; "+
			"missing entries up to the bound read as corrupt, not absent",
			"ledger", id, "bound", st.limboUpTo)
	}
	for _, dm := range damage {
		if dm.Suspect {
			mark(dm.SuspectLedger, dm.SuspectEntry)
			continue
		}
		for _, id := range dm.Ledgers {
			mark(id, math.MaxInt64)
		}
	}
}

func (d *Disk) limboCountLocked() int {
	n := 0
	for _, st := range d.ledgers {
		if st.limbo && !st.deleted {
			n++
		}
	}
	return n
}

// missing is the answer for an entry the bookie does not have: ErrNoSuchEntry, or
// ErrCorrupt when the ledger is in limbo and the entry may be the one lost.
func (d *Disk) missing(ledgerID, entryID int64) error {
	d.lmu.RLock()
	st := d.ledgers[ledgerID]
	limbo := st != nil && st.limbo && entryID <= st.limboUpTo
	d.lmu.RUnlock()
	if limbo {
		return fmt.Errorf("%w: (%d,%d) is missing and the ledger is in limbo after journal damage",
			ErrCorrupt, ledgerID, entryID)
	}
	return ErrNoSuchEntry
}
