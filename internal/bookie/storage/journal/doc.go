// Package journal is the bookie's write-ahead log: every add and every fence is appended
// here and made durable by a group commit before it is acknowledged.
//
// # Files
//
// The journal directory holds files named by a 16-digit lower-case hex id, "%016x.txn",
// with ids growing by one. A new file is started at every open (never appending after a
// tail a crash may have torn), at rotation (journalMaxSizeMB) and after a write error.
// The file after the current one is made ahead, header synced, so a rotation never waits
// for the disk; a crash may leave it behind holding no record, which replays as empty.
// Files are preallocated in journalPreAllocSizeMB steps, so the space after the last record
// is zeros. Files whose id is below the checkpoint's file are deleted after each flush.
//
// # File layout (all integers big-endian)
//
//	offset 0   [4]  magic "MGJL"
//	       4   u32  format version = 1
//	       8   u64  file id (equals the name; a copied or renamed file is rejected)
//	      16   records...
//
// # Record layout
//
//	u32  body length n (1..MaxBody); 0 means "end of data" (preallocated zeros)
//	u32  CRC32C (Castagnoli) of the body
//	[n]  body
//
// Bodies, by their first byte:
//
//	KindAdd   = 1: u8 kind, i64 ledger id, i64 entry id, i64 LAC, u16 master key length k,
//	               [k] master key, payload (the rest of the body)
//	KindFence = 2: u8 kind, i64 ledger id, u16 master key length k, [k] master key
//
// Every add carries the master key so that replay can recreate a ledger whose first add is
// after the checkpoint; 20 bytes per entry is cheap next to a seek.
//
// # Replay
//
// Replay reads files in id order from a checkpoint position (file, offset). A zero length
// ends a file cleanly. A record that is cut short, too long or fails its CRC is either the
// torn tail a crash leaves (BookKeeper #2220: a torn journal must not stop the bookie from
// starting), in which case replay of that file ends there, or damage in the middle of the
// file: replay looks for two valid records in a row after it and, if it finds them, skips
// only the damaged bytes (logged at error level and counted), so one bit flip does not hide
// every acknowledged record behind it. A damaged last record is a torn write only if one of
// its sectors (Sector, 512 bytes) is all zeros: a crash leaves the unwritten sectors of the
// preallocated file as zeros. A last record whose sectors all hold data was written whole
// and may have been acknowledged, so it is reported as Damage too (tailDamage), and the
// storage answers "corrupt" for its entry, not "no such entry". Replay then goes on with the next file, because a
// write error ends a file early and the writer continues in a new one. The CRC on every
// record keeps corrupt data from being replayed (BookKeeper #4659).
//
// # Group commit (Writer)
//
// Append encodes the record into the current batch under a mutex (one copy, no syscall,
// no allocation once the batch buffers are recycled). A batch that reaches MaxGroupBytes is
// set aside as ready and a new one started, so every buffer stays near one size and a
// record is never copied again by buffer growth. One writer goroutine takes the group, all
// ready batches plus the current one, when a batch is ready, the oldest record has waited
// MaxGroupWait, or the group has as many records as the previous one; it writes each
// batch with one pwrite, covers the group with one fdatasync and hands the batches to the
// acker goroutine. While the fsync runs, new appends accumulate, so the group grows by
// itself with fsync latency (BookKeeper's force-write coalescing). A pipelined variant
// (write the next group during the fsync) was measured and dropped: on this disk it
// halved entries per fsync and lowered 64 KiB throughput, since each fsync has a large
// fixed cost. The acker
// decodes the records, calls Options.Apply (the storage inserts them into its write cache;
// it may block, which is the backpressure) and then runs the callbacks in journal order.
// Queued bytes are bounded by QueueBytes: Append blocks beyond it.
//
// Invariants: a callback gets nil only after the fdatasync covering its record returned
// without error (or the write, when SyncData is false); callbacks run in append order;
// after a failed write or sync every record of that batch fails and the next batch goes
// to a new file, since the old file's tail is now undefined.
package journal
