// Package memstore is the in-memory twin of the metadata store, for unit tests of the layers
// above (ledger client, managed ledger, broker) and for `memory://name` metadata URLs, and the
// engine of localstore, standalone's durable store: with Options.Journal set, every write is
// group-committed to the journal before anyone sees it (state.write).
//
// It follows etcd's model so that code tested against it behaves the same on etcdstore:
//   - one store-wide revision counter; every put and delete advances it and a key's Version is
//     the revision of its last modification (etcd's ModRevision). A key deleted and created
//     again therefore never repeats an old version, so a stale CAS cannot succeed (no ABA);
//   - watches deliver the current state, then every change in revision order, through a
//     bounded queue (internal/watchq);
//   - sessions own ephemeral keys and election candidacies; elections are won in the order
//     candidates arrived, like etcd's concurrency.Election.
//
// Sessions are kept alive in-process and never expire on their own; ExpireSession is the test
// hook that makes a session lose its lease as if keep-alives had stopped for its TTL.
//
// A Store is one client handle on shared state. NewClient opens another handle on the same
// state, as a second process would open its own etcd client: closing a handle ends its
// sessions (their ephemeral keys vanish) and its watches, and leaves the data to the others.
package memstore
