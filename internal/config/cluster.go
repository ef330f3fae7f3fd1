package config

import (
	"errors"
	"strings"
	"time"
)

// ClusterConfig is what a broker needs to share topics with other brokers: the bundle split
// of new namespaces and the metadata session that holds its bundle ownerships.
type ClusterConfig struct {
	// NumBundles is the bundle count of a namespace created without one. Every broker
	// reads a namespace's split from its policies, so brokers may differ here harmlessly.
	NumBundles int `key:"defaultNumberOfNamespaceBundles" help:"bundles of a new namespace (hash ranges of its topics, each owned by one broker)"`
	// SessionTimeoutMillis is the TTL of the session holding the broker's registration and
	// bundle ownerships: how long after a broker dies its topics stay unavailable.
	SessionTimeoutMillis int64 `key:"metadataStoreSessionTimeoutMillis" help:"metadata session TTL in milliseconds (failover time after a broker dies)"`
	// LoadReportIntervalMillis is how often a broker refreshes its load report.
	LoadReportIntervalMillis int64 `key:"loadBalancerReportUpdateMinIntervalMillis" help:"milliseconds between load report updates"`
	// Load shedding by the leader broker: move a bundle away from a broker holding at least
	// two more bundles than the least loaded one, at most one per interval. Pulsar's interval
	// key is in minutes; ours is in milliseconds so tests can shorten it.
	SheddingEnabled        bool  `key:"loadBalancerSheddingEnabled" help:"let the leader broker unload bundles from overloaded brokers"`
	SheddingIntervalMillis int64 `key:"loadBalancerSheddingIntervalMillis" help:"milliseconds between load shedding checks of the leader"`
	// Automatic bundle split: a broker splits a bundle it holds whose loaded topics or
	// connected producers+consumers exceed these (Pulsar's keys and defaults), up to
	// loadBalancerNamespaceMaximumBundles bundles per namespace.
	AutoBundleSplitEnabled bool `key:"loadBalancerAutoBundleSplitEnabled" help:"split bundles that exceed the topic or session limits"`
	BundleMaxTopics        int  `key:"loadBalancerNamespaceBundleMaxTopics" help:"loaded topics of one bundle before it is split"`
	BundleMaxSessions      int  `key:"loadBalancerNamespaceBundleMaxSessions" help:"producers+consumers of one bundle before it is split"`
	NamespaceMaxBundles    int  `key:"loadBalancerNamespaceMaximumBundles" help:"most bundles automatic splits make in one namespace"`
	// Load manager (internal/ownership/loadscore.go, shed.go, split.go).
	LoadManager LoadManagerConfig
}

// DefaultClusterConfig returns Pulsar's defaults (4 bundles, 30 s session).
func DefaultClusterConfig() ClusterConfig {
	return ClusterConfig{NumBundles: 4, SessionTimeoutMillis: 30_000, LoadReportIntervalMillis: 5_000,
		SheddingEnabled: true, SheddingIntervalMillis: 60_000,
		AutoBundleSplitEnabled: true, BundleMaxTopics: 1000, BundleMaxSessions: 1000, NamespaceMaxBundles: 128,
		LoadManager: DefaultLoadManagerConfig()}
}

// ShedInterval is the leader's shedding interval, 0 when shedding is off.
func (c *ClusterConfig) ShedInterval() time.Duration {
	if !c.SheddingEnabled {
		return 0
	}
	return time.Duration(c.SheddingIntervalMillis) * time.Millisecond
}

// SplitLimits returns the automatic split limits, all zero when splitting is off.
func (c *ClusterConfig) SplitLimits() (maxTopics, maxSessions, maxBundles int) {
	if !c.AutoBundleSplitEnabled {
		return 0, 0, 0
	}
	return c.BundleMaxTopics, c.BundleMaxSessions, c.NamespaceMaxBundles
}

// SessionTimeout is SessionTimeoutMillis as a duration.
func (c *ClusterConfig) SessionTimeout() time.Duration {
	return time.Duration(c.SessionTimeoutMillis) * time.Millisecond
}

// Validate checks the cluster settings.
func (c *ClusterConfig) Validate() error {
	return errors.Join(
		Between("defaultNumberOfNamespaceBundles", c.NumBundles, 1, 1<<16),
		Between("metadataStoreSessionTimeoutMillis", c.SessionTimeoutMillis, 1000, 600_000),
		Between("loadBalancerReportUpdateMinIntervalMillis", c.LoadReportIntervalMillis, 100, 600_000),
		Between("loadBalancerSheddingIntervalMillis", c.SheddingIntervalMillis, 100, 3_600_000),
		AtLeast("loadBalancerNamespaceBundleMaxTopics", c.BundleMaxTopics, 1),
		AtLeast("loadBalancerNamespaceBundleMaxSessions", c.BundleMaxSessions, 1),
		Between("loadBalancerNamespaceMaximumBundles", c.NamespaceMaxBundles, 1, 1<<16),
		c.LoadManager.Validate(),
	)
}

// BrokerRoleConfig is what `magnetar broker` runs: a broker and its admin HTTP server in one
// process, with metadata in an external etcd and ledgers on the bookies registered there.
type BrokerRoleConfig struct {
	MetadataStoreURL string `key:"metadataStoreUrl" flag:"metadata-url" help:"metadata store URL (etcd://host:2379,...)"`

	// Broker includes the managed-ledger keys (Broker.ManagedLedger).
	Broker  BrokerConfig
	Ledger  LedgerClientConfig
	Cluster ClusterConfig
	// MetadataTLS is how the broker reaches etcd over TLS (metadataStoreConfigPath).
	MetadataTLS MetadataClientTLSConfig

	// FunctionsWorkerEnabled runs a Pulsar Functions worker (functions, sources, sinks) in
	// the broker, as Pulsar's broker.conf functionsWorkerEnabled; off by default as there.
	FunctionsWorkerEnabled bool `key:"functionsWorkerEnabled" flag:"functions-worker" help:"run a functions worker in the broker (functions, sources, sinks)"`
	// FunctionsDataDir holds the worker's packages, virtualenvs and logs when
	// downloadDirectory is empty (ours).
	FunctionsDataDir string `key:"functionsWorkerDataDir" help:"directory of the in-broker functions worker's packages and logs when downloadDirectory is empty (ours)"`
	Functions        FunctionsWorkerConfig
}

// DefaultBrokerRoleConfig returns the broker role defaults (Pulsar's broker.conf: cluster
// "standalone" unless set, E/Qw/Qa 2/2/2).
func DefaultBrokerRoleConfig() BrokerRoleConfig {
	return BrokerRoleConfig{
		MetadataStoreURL: "etcd://127.0.0.1:2379",
		Broker:           DefaultBrokerConfig(),
		Ledger:           DefaultLedgerClientConfig(),
		Cluster:          DefaultClusterConfig(),
		FunctionsDataDir: "./data/broker",
		Functions:        DefaultFunctionsWorkerConfig(),
	}
}

// Validate checks the role's settings.
func (c *BrokerRoleConfig) Validate() error {
	var errs []error
	if u := c.MetadataStoreURL; !strings.HasPrefix(u, "etcd://") && !strings.HasPrefix(u, "memory://") {
		errs = append(errs, &FieldError{Key: "metadataStoreUrl", Value: u, Reason: "must start with etcd:// or memory://"})
	}
	if c.FunctionsWorkerEnabled {
		errs = append(errs, NotEmpty("functionsWorkerDataDir", c.FunctionsDataDir), c.Functions.Validate())
	}
	return errors.Join(append(errs, c.Broker.Validate(), c.Ledger.Validate(), c.Cluster.Validate())...)
}
