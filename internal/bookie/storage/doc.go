// Package storage is a bookie's ledger storage (BookKeeper's DbLedgerStorage in design):
// every add is appended to the journal and acknowledged after the group-commit fsync that
// covers it, then kept in a bounded write cache; a flusher writes the cache sorted by ledger
// and entry into entry logs and records each entry's location in a Pebble index, then moves
// the journal checkpoint. Reads go write cache -> read cache -> index + entry log.
package storage
