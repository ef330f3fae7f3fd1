// Package storage is a bookie's ledger storage (BookKeeper's DbLedgerStorage in design):
// every add is appended to the journal and acknowledged after the group-commit fsync that
// covers it, then kept in a bounded write cache; a flusher writes the cache sorted by ledger
// and entry into entry logs and records each entry's location in a Pebble index, then moves
// the journal checkpoint. Reads go write cache -> read cache -> index + entry log.
//
// Open returns the disk implementation (Disk); NewMemory the in-memory twin for tests of
// the layers above. Both pass the conformance suite in storagetest. The byte formats are
// in the doc.go of journal/, entrylog/ and index/; vfs/ is the file-system seam with fault
// injection. docs/design/bookie-storage.md is the reader's guide: the add and read paths,
// the goroutines (journal writer, journal acker, flusher, garbage collector, disk
// checker), the lock order and the invariants.
package storage
