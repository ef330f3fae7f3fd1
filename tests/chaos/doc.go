// Package chaos is a Jepsen-style fault harness over real magnetar processes. Each process
// (3 metadata members, bookies, brokers, a proxy) runs in a network namespace of its own,
// joined by a veth pair to a bridge in a hub namespace, so network faults are real: nftables
// drops inside a namespace for partitions (isolate a node, split the cluster, one-way drops),
// links set down and up, tc rate limits, and a fault proxy in the test process for delay,
// loss-like stalls and blackholes (this kernel has no netem). Process faults are SIGKILL and
// restart, SIGSTOP/SIGCONT; disk faults go through the bookie's fault file layer, enabled by
// a test-only flag (--test-fault-control); file damage is done to a stopped bookie's files.
//
// A workload of producers with unique (producer, sequence) payloads, with and without
// deduplication, and consumers on every subscription type records a history of operations
// (invoke, ok, fail, info); the checker reports lost, unexpected, duplicated and reordered
// messages, and porcupine checks the metadata register operations for linearizability.
// Scenarios R0-R14 of the reliability goal table are seeded (SEED=...) and each writes a JSON
// result. The short tier runs in `make test`; `make chaos` runs the long tier (CHAOS_LONG=1,
// >= 1,000,000 acknowledged messages per scenario). The harness needs root (namespaces,
// nftables) and installs Debian's nftables when nft is missing.
package chaos
