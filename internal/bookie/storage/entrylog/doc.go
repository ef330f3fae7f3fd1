// Package entrylog stores flushed entries in append-only entry log files in the ledger
// directory. The flusher writes a whole write-cache generation sorted by (ledger, entry),
// so a catch-up read of one ledger is a sequential scan of a region of one log.
//
// # Files
//
// "%016x.log", ids growing by one. A new log is started at every open (never appending
// after a tail a crash may have torn) and when the current one passes logSizeLimit. Logs
// are removed by garbage collection once none of their entries is live.
//
// # File layout (all integers big-endian)
//
//	offset 0   [4]  magic "MGEL"
//	       4   u32  format version = 1
//	       8   u64  log id (equals the name)
//	      16   [16] reserved, zero
//	      32   records...
//
// # Record layout
//
//	u32  payload length n (at most MaxPayload)
//	u32  CRC32C (Castagnoli) of the next 16 + n bytes
//	i64  ledger id
//	i64  entry id
//	[n]  payload
//
// The index stores (log id, offset, record size) per entry. A read checks the CRC and that
// the record's ledger and entry ids are the ones asked for; any mismatch, short read or
// missing log is ErrCorrupt, never "no such entry" (BookKeeper #2908: a corrupt log read
// as absent let recovery truncate a ledger). Records after a crash's torn tail are never
// referenced by the index, because the index is written only after the log is synced.
package entrylog
