// Package etcdstore implements metadata.Store over etcd v3 (go.etcd.io/etcd/client/v3), and
// runs an embedded etcd member (go.etcd.io/etcd/server/v3/embed) for standalone and for
// `magnetar metadata`.
//
// # Mapping onto etcd
//
//   - Version is the key's ModRevision: the cluster-wide revision of its last change. It only
//     grows, also across a delete and re-create, so a CAS based on a stale read can never
//     succeed against a newer incarnation of the key (etcd's per-key Version restarts at 1 and
//     would allow that ABA). NotExists compares CreateRevision = 0.
//   - Put and Delete with an expected version are one Txn: If(compare) Then(op) Else(Get), the
//     Else telling ErrNotFound from ErrBadVersion without a second round trip.
//   - List pages through the range (ListPageSize keys a page) pinned to the revision of the
//     first page, so a large prefix is one consistent snapshot without one huge response.
//   - Watch reads the current state, then starts the etcd watch at that read's revision + 1:
//     no change between the read and the watch is lost or duplicated. Events pass through the
//     bounded queue of internal/watchq; a consumer more than MaxWatchBacklog changes behind,
//     a compacted revision or a member that lost its leader (WithRequireLeader) closes the
//     channel and the consumer watches again.
//   - A Session is an etcd lease kept alive by concurrency.Session. Ephemeral keys are put
//     with the lease; when keep-alives stop for the TTL the lease expires, etcd deletes the
//     keys and Done closes. Leases are granted in whole seconds (TTL rounded up).
//   - Campaign is concurrency.Election: a key "<election>/<lease hex>" per candidate, the
//     lowest create revision leads. Leadership.Done also closes when the leader key is
//     deleted by anyone, found by a watch on it.
//
// All reads are linearizable (etcd's default; never WithSerializable), as ownership and ledger
// metadata need.
package etcdstore
