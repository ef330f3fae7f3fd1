// Package metadata defines the metadata store every role uses: cluster membership (bookies and
// brokers as session-bound keys), tenants, namespaces and policies, bundle ownership, ledger
// metadata, managed-ledger ledger lists and cursor snapshots.
//
// Store is the only way in; implementations are etcdstore (an etcd cluster or an embedded
// member) and memstore (an in-memory twin for unit tests of the layers above). One
// conformance suite, storetest, runs against every implementation.
package metadata
