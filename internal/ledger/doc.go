// Package ledger is the BookKeeper client: it creates ledgers replicated over an ensemble of
// bookies (write quorum, ack quorum, striping), keeps their metadata in the metadata store by
// CAS, replaces failed bookies (ensemble change), reads with speculative retries, recovers
// and fences ledgers of a dead writer, and deletes them. Brokers import this package, never
// internal/bookie.
package ledger
