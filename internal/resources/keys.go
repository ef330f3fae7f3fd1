package resources

// The metadata layout of a Magnetar cluster: every key prefix in one table. Each record has
// one owner, the package that writes it and gives everyone else its typed API; nobody else
// spells a key. docs/ARCHITECTURE.md §7 shows the same table.
const (
	// ClustersPrefix + name: ClusterData. Owner: resources.
	ClustersPrefix = "/admin/clusters/"
	// PoliciesPrefix + tenant: TenantInfo; PoliciesPrefix + tenant/namespace: Policies.
	// Owner: resources (the topic service watches the prefix for policy changes).
	PoliciesPrefix = "/admin/policies/"
	// PartitionedTopicsPrefix + tenant/ns/domain/topic: PartitionedTopicMetadata. Owner:
	// resources (written for the topic service and the admin API).
	PartitionedTopicsPrefix = "/admin/partitioned-topics/"
	// TopicsPrefix + tenant/ns/domain/topic: TopicRecord ("{}": the non-partitioned topic or
	// partition exists). Owner: resources.
	TopicsPrefix = "/admin/topics/"
	// TopicPoliciesRoot + /tenant/ns/domain/topic: TopicPolicies. Owner: resources.
	TopicPoliciesRoot = "/admin/topic-policies"
	// DynamicConfigKey: the dynamic configuration overrides, a JSON object of key name ->
	// value string (Pulsar's path). Owner: resources (DynamicConfig, UpdateDynamicConfig);
	// every broker's topic service watches it.
	DynamicConfigKey = "/admin/configuration"
	// SchemasRoot + /tenant/ns/topic/...: schema histories. Owner: internal/schema.
	SchemasRoot = "/schemas"

	// BookieRegistrationsPrefix + host:port: BookieRegistration, session-bound. Written by
	// internal/bookie, watched by internal/ledger, listed by the admin API; shape here.
	BookieRegistrationsPrefix = "/bookies/available/"
	// BookieCookiesPrefix + host:port: BookieCookie. Owner: internal/bookie.
	BookieCookiesPrefix = "/bookies/cookies/"
	// DecommissionedBookiesPrefix + host:port: "{}", a bookie being decommissioned. Owner:
	// internal/ledger (Decommission, Recommission).
	DecommissionedBookiesPrefix = "/ledger-decommissioned/"
	// LedgersPrefix + zero-padded id: ledger metadata. Owner: internal/ledger.
	LedgersPrefix = "/ledgers/"
	// LedgerIDCounterKey: the ledger id counter (ids are its versions). Owner: internal/ledger.
	LedgerIDCounterKey = "/ledger-id-counter"
	// AuditorElectionKey: the auditor's leader election. Owner: internal/ledger.
	AuditorElectionKey = "/ledger-auditor"
	// ManagedLedgersRoot + /name[/cursor]: ledger lists and cursor snapshots. Owner:
	// internal/managedledger (managedledger/doc.go has the formats).
	ManagedLedgersRoot = "/managed-ledgers"

	// BrokersPrefix + host:port: broker registrations with load reports, session-bound.
	// Owner: internal/ownership (the proxy watches it: proxyBrokerRegistrationPrefix).
	BrokersPrefix = "/loadbalance/brokers/"
	// LeaderElectionKey: the load-manager leader election. Owner: internal/ownership.
	LeaderElectionKey = "/loadbalance/leader"
	// BundleOwnershipPrefix + tenant/ns/0x..._0x...: bundle ownership, session-bound.
	// Owner: internal/ownership.
	BundleOwnershipPrefix = "/namespace/"

	// IcebergTablesRoot + /tenant/namespace/table (path-escaped): an Iceberg table's record
	// (metadata location and the position each topic partition's data covers). Owner:
	// internal/lakehouse (lakehouse/doc.go has the format).
	IcebergTablesRoot = "/iceberg/tables"

	// FunctionsRoot + workers/, leader, meta/, assignments/, state/, packages/: the functions
	// worker's membership, leader election, function metadata, assignments, state and
	// package references. Owner: internal/functions (functions/meta.go has the formats).
	FunctionsRoot = "/functions/"

	// PackagesRoot + type/tenant/namespace/name/version: PackageRecord, the packages API's
	// metadata of a package version (its bytes are in ledgers). Owner: resources
	// (packages.go), for internal/admin and internal/functions (function:// URLs).
	PackagesRoot = "/packages/"

	// KafkaRoot + groups/{group}, producer-ids, log-start/{partition},
	// offsets/{group}/{partition}: the Kafka front end's group records, producer-id counter,
	// DeleteRecords low watermarks and offsets committed for partitions owned elsewhere. Owner:
	// resources (kafka.go has the shapes), for internal/kafka.
	KafkaRoot = "/kafka/"
)
