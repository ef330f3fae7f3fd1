// Package standalone runs every role in one process: a metadata store (the local store on
// Pebble, or with standaloneMetadataStore=etcd an embedded etcd member), a bookie, the
// ledger client, the managed-ledger factory, the broker and the HTTP server (admin REST,
// /metrics, /status.html). It is a composition of the same components a cluster runs as
// separate processes, not a mode threaded through them.
//
// Start order follows the dependencies (metadata -> bookie -> ledger client -> managed
// ledgers -> broker -> HTTP) and Close runs it backwards, so every component stops before
// what it uses: the broker tells clients and flushes before the bookie closes, and the bookie
// deregisters before the metadata store closes.
//
// Data layout under --data-dir:
//
//	metadata/store/    local metadata store (Pebble; internal/metadata/localstore)
//	metadata/member/   or: embedded etcd member (WAL, snapshots, bbolt database)
//	bookie/journal/    bookie journal (WAL)
//	bookie/ledgers/    entry logs and the Pebble index
//	bookie/address     the bookie address chosen when configured with port 0 (reused on restart)
package standalone
