// Package txn is Pulsar transactions, shared by the front ends that offer them (the Pulsar
// protocol in internal/broker; the Kafka protocol builds on the same coordinator): the
// transaction coordinator, the transaction buffer of each topic and the pending
// acknowledgements of each subscription. It sits on the topic service's layer
// (ARCHITECTURE.md §3): it keeps its state in managed ledgers of its own and reads and
// writes topic logs directly; the topic service calls its hooks. docs/design/txn.md is the
// reader's guide.
//
// # Shape
//
//	c, _ := txn.OpenCoordinator(ctx, txn.CoordinatorOptions{ID: 0, Ledgers: f, Participants: p, Config: cfg})
//	id, _ := c.New(ctx, time.Minute, principal)            // NEW_TXN
//	c.AddPartitions(ctx, id, []string{topic})              // ADD_PARTITION_TO_TXN
//	c.AddSubscriptions(ctx, id, []txn.Subscription{...})   // ADD_SUBSCRIPTION_TO_TXN
//	c.End(ctx, id, txn.Commit)                             // END_TXN: every participant, then forgotten
//
//	st, _ := txn.OpenTopicState(ctx, txn.TopicStateOptions{Topic: name, Log: ml, Ledgers: f})
//	st.Prepare(ctx)                                        // before the first transactional use
//	b := st.Buffer()
//	b.BeforeAppend(id); ml.AddEntry(txn.StampEntry(...)); b.Appended(id, pos, err)
//	b.End(ctx, id, txn.Commit, lowWaterMark)               // END_TXN_ON_PARTITION: the marker
//	pa, _ := st.Subscription(sub, ops)
//	pa.Ack(ctx, id, acks, cumulative)                      // ACK with txnid: held
//	pa.End(ctx, id, txn.Abort, lowWaterMark)               // END_TXN_ON_SUBSCRIPTION
//
// # Where the state lives
//
//   - Coordinator i: the managed ledger LogName(i), "pulsar/system/transaction-log/
//     __transaction_log_<i>", one cursor "transaction.subscription". Opening it fences the
//     previous owner. Coordinator i is served by the broker owning partition i of
//     persistent://pulsar/system/transaction_coordinator_assign.
//   - A topic: its transactional entries and their markers are in the topic's own log
//     (entry.go); its buffer snapshots and its subscriptions' pending acknowledgements are
//     in the managed ledger StateLogName(topic log), "<tenant>/<ns>/transaction-state/<t>",
//     created by Prepare before the topic's first transactional publish or acknowledgement
//     (so a topic without one has none, and a topic load that finds none knows no entry of
//     it belongs to a transaction).
//
// Both are record logs (log.go): a record no longer needed is acknowledged on the log's
// cursor; a replay reads the rest. The cursor may persist only some acknowledged ranges, so
// a replay can see records acknowledged before a crash again; every replay treats a record
// whose transaction's earlier records are gone as acknowledged, and the last record of a
// transaction (its final status, its end on a subscription) is acknowledged with the
// others, so what comes back is always a suffix that still makes sense.
//
// # Batched entries (log_batch.go)
//
// With transactionLogBatchedWriteEnabled (coordinator logs) or
// transactionPendingAckBatchedWriteEnabled (topic state logs) records appended while an
// entry of the log is in flight share the next entry; a lone record is still written
// plain. A batched entry:
//
//	byte     0xB1 (a record starts with its version, 1)
//	uvarint  n (2..100000), n x (uvarint length (1..64 MiB), the record)
//
// A record is named by (entry, index); the entry is acknowledged once every record in it
// is, and the entries of one transaction's records oldest first (so replays still see
// suffixes). The decoder rejects bad counts and lengths, truncation and trailing bytes.
//
// # Coordinator log (record.go)
//
// One record per entry. varint is zig-zag signed (binary.AppendVarint), uvarint unsigned;
// str is uvarint length (at most 64 KiB) then the bytes:
//
//	byte     version = 1
//	byte     kind: 1 new, 2 partitions, 3 subscriptions, 4 status
//	uvarint  sequence                    the transaction's least bits (most bits: the coordinator id)
//	kind 1:  uvarint timeoutMillis, varint openedAtUnixMillis, str owner (the principal, "" without auth)
//	kind 2:  uvarint n (1..10000), n x str topic
//	kind 3:  uvarint n (1..10000), n x (str topic, str subscription)
//	kind 4:  byte status (1 COMMITTING, 2 COMMITTED, 3 ABORTING, 4 ABORTED), byte flags (bit 0: timed out)
//
// A transaction's records are: one new, any partitions and subscriptions, COMMITTING or
// ABORTING, then COMMITTED or ABORTED; once the final one is durable all of them are
// acknowledged. The highest sequence handed out is kept in the cursor property
// "sequenceId" before any record is acknowledged, so it survives when every record is gone.
// A new transaction is answered before its record is durable (at most newAhead at once), so
// a recovery of a log that existed before skips newAhead sequences past the highest found.
// The decoder rejects unknown versions and kinds, bad statuses, truncation, trailing bytes
// and counts larger than the record.
//
// # Topic state log (state_record.go)
//
// Positions are (varint ledgerId, varint entryId):
//
//	byte     version = 1
//	byte     kind: 1 buffer snapshot, 2 acknowledgement, 3 end on a subscription
//	kind 1:  position maxRead            every transactional entry at or before it had ended
//	         uvarint n, n x (uvarint most, uvarint least, position abortMarker)   aborted transactions
//	         uvarint w, w x (uvarint coordinator, uvarint lowWaterMark)           ascending by coordinator
//	kind 2:  str subscription, uvarint most, uvarint least, byte flags (bit 0: cumulative)
//	         uvarint n (1 if cumulative), n x (position, uvarint words (0..1024), words x uint64 LE)
//	                                     words: the request's ack_set (bit set: member NOT acknowledged); 0: whole entry
//	kind 3:  str subscription, uvarint most, uvarint least, byte action (0 commit, 1 abort)
//
// Only the newest snapshot matters (older ones are acknowledged once a newer is durable).
// A recovery replays the topic's log after maxRead: transactional entries of transactions
// not known as aborted make them open again (their first entry hides everything after it),
// markers end them. Aborted transactions whose marker is no longer stored are left out of
// the next snapshot.
//
// # Errors
//
// Every error wraps one of wire's classes (errors.go): ErrCoordinatorNotFound,
// ErrNotFound (TransactionNotFound), ErrInvalidStatus (InvalidTxnStatus), ErrConflict
// (TransactionConflict), ErrNotAllowed, ErrDisabled, and ServiceNotReady / PersistenceError
// for a topic whose state is closed or whose log failed.
package txn
