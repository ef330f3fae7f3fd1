// Package realtest holds the managed ledger's integration tests on real components: the
// ledger client (internal/ledger) over TCP to a bookie with disk storage, and an embedded
// etcd member as the metadata store. The test binary re-executes itself as a "broker"
// process that writes and acknowledges through a managed ledger and is then SIGKILLed, so
// recovery is tested against a process that never shut down cleanly. It has no non-test
// code.
package realtest
