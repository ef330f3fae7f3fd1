// Package sqlworker runs the SQL front end (internal/sql) in a process: inside standalone
// (Start over the broker's own managed-ledger factory) or as `magnetar sql-worker`
// (StartRole: a metadata client, bookie and ledger clients and tiered storage of its own,
// reading storage directly, like Pulsar's sql-worker). storage.go is the SQL front end's
// Source over resources, the schema registry and managed-ledger read-only snapshots.
package sqlworker
