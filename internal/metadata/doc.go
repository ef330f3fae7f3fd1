// Package metadata defines the metadata store every role uses: cluster membership (bookies and
// brokers as session-bound keys), tenants, namespaces and policies, bundle ownership, ledger
// metadata, managed-ledger ledger lists and cursor snapshots.
//
// Store is the only way in; implementations are etcdstore (an etcd cluster or an embedded
// member) and memstore (an in-memory twin for unit tests of the layers above). One
// conformance suite, storetest, runs against every implementation. connect.Open turns a
// metadata URL (etcd://h1:2379,h2:2379 or memory://name) into a Store.
//
// Beside the interface this package holds what every Store user shares: Registration, which
// keeps a session-bound key registered through session loss (losing the metadata session must
// not stop the data plane), and Leader, which reads who leads an election from stores that
// implement LeaderReader.
//
// Versions are store-wide revisions (etcd's ModRevision): they grow across a delete and
// re-create of a key, and not by one per write of that key: compare them (equal, older,
// newer), never count with them.
package metadata
