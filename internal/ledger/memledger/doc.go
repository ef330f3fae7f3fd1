// Package memledger is an in-memory twin of the ledger client (ledger.Client) for unit tests
// of the layers above it, chiefly the managed ledger. It keeps ledger semantics that those
// layers depend on: appends complete asynchronously, in entry order, on another goroutine;
// after a failed append every later append of that writer fails; opening with recovery fences
// the ledger so that the writer's later appends fail with ledger.ErrFenced and closes it at
// its last entry; reads past the reader's last-add-confirmed fail, and that LAC lags the
// writer's as on real bookies (learned from the LAC piggybacked on later adds, so the newest
// entry of an open ledger is unreadable until the next add or the close); deleted ledgers are
// gone.
//
// Faults lets a test fail creates, appends, reads and deletes, or slow appends down. Nothing
// is persisted: a "crash" in a test is dropping the layer above while keeping this Client,
// which plays the part of the bookies.
package memledger
