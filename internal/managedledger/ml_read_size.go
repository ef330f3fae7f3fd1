package managedledger

// Byte bounds on reads (dispatcherMaxReadSizeBytes).
//
// A read is sized in entries (dispatcherMaxReadBatchSize, managedLedgerReadAheadEntries),
// but with producer batching one entry can be 100+ KiB: a 100-entry read plus 100 entries
// of read-ahead was over 20 MiB in workload W7's drain, all of it live at once (the
// bookie's response, the entries handed to the dispatcher, the read-ahead in the cache),
// which set the broker's peak heap. Like Pulsar's dispatcherMaxReadSizeBytes, a cursor read
// stops adding entries once their estimated size reaches Config.MaxReadSizeBytes (always
// returning at least one), and a catch-up read from the bookies fetches read-ahead only
// while the entries asked for plus the read-ahead stay within it.
//
// Sizes are estimates: each ledger's average entry size (its bytes over its entries, known
// exactly for ledgers this broker wrote or closed and estimated for recovered ones). No
// entry is ever split or skipped; the bound only decides where a read ends.

// readSizeBudget accumulates estimated bytes for one cursor read.
type readSizeBudget struct {
	used     int64
	ledgerID int64
	avg      int64
	known    bool
}

// takeLocked adds one entry of ledger id to the budget and reports whether it still fits
// (entries beyond the bound are not taken). Caller holds ml.mu.
func (b *readSizeBudget) takeLocked(ml *ManagedLedger, id int64) bool {
	limit := ml.cfg.MaxReadSizeBytes
	if limit <= 0 {
		return true
	}
	if !b.known || b.ledgerID != id {
		b.ledgerID, b.avg, b.known = id, ml.avgEntrySizeLocked(id), true
	}
	if b.used > 0 && b.used+b.avg > limit {
		return false
	}
	b.used += b.avg
	return true
}

// avgEntrySizeLocked is the average entry size of ledger id (0 when unknown or empty).
func (ml *ManagedLedger) avgEntrySizeLocked(id int64) int64 {
	i := ml.indexLocked(id)
	if i >= len(ml.ledgers) || ml.ledgers[i].LedgerID != id || ml.ledgers[i].Entries <= 0 {
		return 0
	}
	return ml.ledgers[i].Size / ml.ledgers[i].Entries
}

// readAheadFor is how many entries of read-ahead a catch-up read of n entries of ledger id
// may add: at most readAhead, and only as many as fit in MaxReadSizeBytes together with
// the n entries asked for.
func (ml *ManagedLedger) readAheadFor(id, n, readAhead int64) int64 {
	ml.mu.Lock()
	defer ml.mu.Unlock()
	limit := ml.cfg.MaxReadSizeBytes
	avg := ml.avgEntrySizeLocked(id)
	if limit <= 0 || avg <= 0 || readAhead <= 0 {
		return readAhead
	}
	room := limit - n*avg
	if room <= 0 {
		return 0
	}
	return min(readAhead, room/avg)
}
