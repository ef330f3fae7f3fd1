// Package index is the bookie's Pebble index: where each flushed entry lives, each
// ledger's metadata, each entry log's per-ledger byte counts (for garbage collection) and
// the journal checkpoint. One Pebble batch per flush writes all of them with sync, so the
// checkpoint never gets ahead of the locations it covers.
//
// # Keys and values (all integers big-endian; ids are never negative, so byte order is
// numeric order)
//
//	'e' u64 ledger u64 entry  -> u64 log id, u32 offset, u32 record size     (location)
//	'l' u64 ledger            -> u8 version=1, u8 flags (1 fenced, 2 deleted),
//	                             i64 LAC, u8 master key length k, [k] master key;
//	                             version=2 (ledger in limbo) appends i64 limbo bound
//	'g' u64 log id            -> u8 version=1, uvarint count, count x (u64 ledger, u64 bytes)
//	'c'                       -> u64 journal file id, u64 offset               (checkpoint)
//
// A deleted ledger keeps its 'l' key with the deleted flag (a tombstone, a few bytes), so
// journal replay and late adds cannot bring it back; its 'e' keys are removed with one
// range delete.
package index
