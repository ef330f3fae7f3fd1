// Package localstore is the durable metadata store of `magnetar standalone`: a metadata.Store
// in one process, on the Pebble database the bookie's index already uses. etcd stays the
// store of clusters; a standalone needs neither its raft election (up to an election timeout
// at every start) nor its network round trips.
//
// The data live in memory, in the memstore engine (same CAS, revisions, watches, sessions and
// elections, so the storetest conformance suite means the same here), and every change goes
// through a memstore.Journal into Pebble before it becomes visible: writes that arrive while
// one group is being synced are committed together as the next group, with one fsync
// (memstore.go:state.write). Open reads the whole database back.
//
// Sessions live as long as the process: a restart ends every session of the previous one,
// so Open deletes the ephemeral keys it finds (each deletion advancing the revision, as
// their expiry would in etcd). Ephemeral keys are journaled like the others, so revisions
// never repeat across a restart.
//
// # Keys and values in Pebble (integers big-endian)
//
//	0x00 "format"      -> u32 format version (1)
//	0x00 "rev"         -> u64 store revision: the version of the newest change
//	'k' metadata key   -> u64 version, u8 flags (1: ephemeral), value bytes
//
// One Pebble batch per group commit holds its puts, deletes and the new revision, written
// with sync, so after a crash the database holds a prefix of the acknowledged groups and at
// least every acknowledged one.
package localstore
