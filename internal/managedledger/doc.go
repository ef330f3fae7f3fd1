// Package managedledger is a topic's log: an ordered chain of ledgers (internal/ledger) whose
// list lives in the metadata store, plus the cursors of its subscriptions, an entry cache
// shared by all topics of a broker, ledger rollover, retention trimming, backlog quotas,
// message TTL and termination. It is our version of Pulsar's ManagedLedger.
//
// # Use
//
//	f, _ := managedledger.NewFactory(managedledger.FactoryOptions{Ledger: lc, Store: st, Config: cfg})
//	ml, _ := f.Open(ctx, "public/default/persistent/t", f.DefaultConfig())
//	ml.AddEntry(data, func(p managedledger.Position, err error) { ... })  // pipelined, in order
//	c, _ := ml.OpenCursor(ctx, "sub", managedledger.InitialPositionEarliest)
//	es, _ := c.ReadEntriesOrWait(ctx, 100, 5<<20)
//	c.Delete(es[3].Position)        // individual ack, any order
//	c.MarkDelete(es[2].Position)    // cumulative ack
//
// # Contract
//
//   - One owner writes a managed ledger at a time. Open recovers (fences) the previous
//     owner's last ledger and writes the ledger list by CAS; the old owner's later adds fail
//     with ErrFenced (which also matches ledger.ErrFenced when the bookies refused them).
//   - AddEntry callbacks arrive in call order with increasing positions. An acknowledged add
//     is on AckQuorum bookies.
//   - Acks are cheap: cursor state is persisted at most MarkDeleteRateLimit times per second
//     per cursor into the cursor's own ledger; the metadata store sees a snapshot only when
//     the cursor ledger changes or every CursorSnapshotInterval. After a crash, acks newer
//     than the last flush are redelivered, never lost the other way round.
//   - Trimming deletes only ledgers entirely at or before every durable cursor's mark-delete
//     position (and only once retention allows); non-durable cursors do not hold data back.
//
// # Metadata layout and formats
//
// Under the root (DefaultMetadataRoot = "/managed-ledgers"), names are path-escaped
// (url.PathEscape) so that each is one key segment:
//
//	/managed-ledgers/<name>            ledger list, JSON:
//	    {"ledgers":[{"ledgerId":7,"entries":50000,"size":52428800,"timestamp":1764400000000},...],
//	     "terminatedPosition":{"ledgerId":9,"entryId":41}}          (only once terminated)
//	    entries/size are final for closed ledgers; timestamp is the creation time of the open
//	    ledger and the close time of closed ones (Unix ms). A ledger in tiered storage also has
//	    "offloadContext":{"uuid":"…","complete":true,"bookkeeperDeleted":true,"timestamp":…,
//	     "driverName":"S3","driverMetadata":{"bucket":"…","serviceEndpoint":"…"}}
//	    (ml_offload.go; complete=false while an upload under that uuid may be in progress).
//	/managed-ledgers/<name>/<cursor>   cursor snapshot, JSON:
//	    {"cursorsLedgerId":12,"markDeletePosition":{"ledgerId":7,"entryId":99},
//	     "state":"<base64 of the binary cursor state>","lastActive":1764400000000}
//	    cursorsLedgerId -1 means the state field is the newest state; otherwise the last
//	    entry of that cursor ledger is at least as new as state.
//
// Binary cursor state (the value of each cursor-ledger entry and of "state"), version 1.
// varint is zig-zag signed (binary.AppendVarint), uvarint unsigned (binary.AppendUvarint):
//
//	byte     version = 1
//	varint   markDelete.ledgerId
//	varint   markDelete.entryId          (-1: nothing of that ledger consumed)
//	uvarint  n                           number of acknowledged spans that follow
//	n times, spans ascending and disjoint, each after the mark-delete position:
//	  uvarint  ledgerDelta               ledgerId minus the previous span's (the first: minus markDelete.ledgerId)
//	  uvarint  first                     ledgerDelta == 0: first - previousEnd - 1 (previousEnd: previous span's
//	                                     last entry, or markDelete.entryId); else: the first entry id itself
//	  uvarint  length                    last - first
//
// Version 2 (a cursor with properties, Cursor.MarkDeleteWithProperties, or with partly
// acknowledged batch entries, cursor_batch.go) is version 1 with version byte 2, followed by
// both sections (either count may be 0):
//
//	uvarint  p                           number of properties
//	p times, names ascending:
//	  uvarint  len, then len bytes       property name (at most 4096 bytes)
//	  varint   value
//	uvarint  m                           number of partly acknowledged batch entries
//	m times, ascending by position:
//	  varint   ledgerId
//	  varint   entryId
//	  uvarint  w                         bitset words, 1..1024
//	  w times  uint64 little-endian      bit i set: batch member i not yet acknowledged
//
// The encoder keeps only the lowest MaxUnackedRangesToPersist spans (and as many batch
// entries); dropping higher spans
// only causes redelivery. The decoder rejects unknown versions, truncation, trailing bytes
// and ids of 2^62 or more; adjacent spans from another encoder are merged.
//
// # Files
//
// factory.go (Factory, shared cache, background pass), ml.go (open/recovery, position
// arithmetic, terminate, close, delete), ml_add.go (addPipeline: the add queue, the writer, the tail
// and the ordered callbacks, and rollover; read its comment first), ml_read.go (cache and ledger reads, read-ahead), ml_retention.go (Retention: trim,
// backlog quota, TTL; find by publish time), cursor.go (cursor API; cursorSet, the registry of a managed ledger's cursors), cursor_persist.go
// (cursor ledger, snapshots, recovery), rangeset.go (acknowledged spans), codec.go (formats
// above), cache.go (entry cache), cache_evict.go (eviction by read position), stats.go
// (internal stats), metrics.go (pulsar_ml_* Prometheus collector). docs/design/managedledger.md is the reader's guide.
package managedledger
