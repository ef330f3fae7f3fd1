// Package bookie is the bookie: the storage node that keeps ledger entries for the ledger
// client (internal/ledger). It serves the bookie protocol (internal/bookieproto) over TCP
// on top of a storage.Storage (internal/bookie/storage: journal, write cache, entry logs,
// index) and registers itself in the metadata store so ledger clients can find it.
//
// Start assembles a running bookie (storage, listener, Server, registration); `magnetar
// bookie` runs one per process and standalone embeds one. Server is the protocol server
// alone, for callers that bring their own listener and storage.
//
// Contract:
//   - An add is answered OK only from the storage's done(nil), i.e. after the journal
//     fsync that covers it; adds of one connection reach the storage in wire order.
//   - Each connection has an in-flight budget (maxInFlightRequestsPerConnection,
//     maxInFlightBytesPerConnection); when it is spent the bookie stops reading that
//     connection, and TCP pushes back on the client.
//   - A malformed or oversized frame closes only its connection, with a Warn log and
//     bookie_server_malformed_frames_total; other connections are not disturbed.
//   - A fencing read or read-LAC fences before answering; a corrupt entry is CORRUPT, never
//     NO_SUCH_ENTRY.
//   - Registration is a session-bound key resources.BookieRegistrationsPrefix+address whose JSON
//     value follows storage.ReadOnly; losing the metadata session never stops serving.
//   - Close deregisters, stops reading, answers what was read (bounded by shutdownTimeout),
//     then closes the storage it opened.
//
// docs/design/bookie.md walks through the code.
package bookie
