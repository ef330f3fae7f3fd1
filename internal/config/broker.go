package config

import (
	"errors"
	"time"
)

// BrokerConfig is the broker's binary-protocol service: listeners, advertised address, topic
// auto-creation, message size and the flow-control bounds of connections and dispatchers.
// Key names are Pulsar's broker.conf keys. The few that change at run time are listed in
// internal/broker/dynconfig.go (POST /admin/v2/brokers/configuration/{name}/{value}).
type BrokerConfig struct {
	// ShutdownTimeoutMs bounds a shutdown after SIGTERM (Pulsar's brokerShutdownTimeoutMs):
	// whatever is unreachable, the process exits by then. What was acknowledged is durable
	// before the acknowledgement, so giving up on the rest loses nothing acknowledged.
	ShutdownTimeoutMs int64 `key:"brokerShutdownTimeoutMs" help:"longest clean shutdown after SIGTERM, in milliseconds; the process exits by then"`
	// TestClockOffset skews this broker's clock (internal/clock's Offset) for retention, TTL,
	// transaction timeouts and delayed delivery: the chaos harness's clock fault (R12). Set
	// only by the hidden --test-clock-offset flag; no config key.
	TestClockOffset time.Duration `key:"-"`
	// ClusterName names the cluster this broker belongs to (standalone: "standalone").
	ClusterName string `key:"clusterName" help:"name of the cluster this broker belongs to"`
	// BindAddress is the host the binary and HTTP listeners bind to.
	BindAddress string `key:"bindAddress" help:"host the broker's listeners bind to"`
	// ServicePort is the binary protocol port (pulsar://); 0 picks a free port (tests).
	ServicePort int `key:"brokerServicePort" flag:"port" help:"binary protocol (pulsar://) port (-1: none, TLS only)"`
	// WebServicePort is the HTTP port (admin REST, /metrics).
	WebServicePort int `key:"webServicePort" flag:"http-port" help:"HTTP port (admin REST, metrics) (-1: none, HTTPS only)"`
	// AdvertisedAddress is the host clients are told to connect to in lookup answers;
	// empty means the bind address, or "localhost" when that is a wildcard.
	AdvertisedAddress string `key:"advertisedAddress" help:"host advertised to clients in lookups (default: bind address or localhost)"`

	// MaxMessageSize is the largest message (payload + metadata) accepted, in bytes; the
	// largest frame is this plus 10 KiB. It is sent to clients in CONNECTED.
	MaxMessageSize int `key:"maxMessageSize" help:"largest message accepted, in bytes"`

	// Topic auto-creation on first use by a producer, consumer or partitioned-metadata
	// request. Type is "non-partitioned" or "partitioned" (with DefaultNumPartitions).
	AllowAutoTopicCreation     bool   `key:"allowAutoTopicCreation" help:"create topics on first use"`
	AllowAutoTopicCreationType string `key:"allowAutoTopicCreationType" help:"kind of auto-created topics: non-partitioned or partitioned"`
	DefaultNumPartitions       int    `key:"defaultNumPartitions" help:"partitions of auto-created partitioned topics"`

	// KeepAliveIntervalSeconds is how often the broker pings an idle connection; one that
	// sends nothing for twice this long is closed.
	KeepAliveIntervalSeconds int `key:"keepAliveIntervalSeconds" help:"seconds between pings on idle connections; silent for twice as long closes it"`

	// Publish flow control: bytes of SENDs read but not yet acknowledged by storage, per
	// connection (our key; Pulsar only counts requests) and per broker (Pulsar's key, MiB).
	// Above either limit the broker stops reading from the producer's connection (never drops).
	MaxPendingPublishBytesPerConnection int64 `key:"maxPendingPublishBytesPerConnection" help:"unacknowledged publish bytes per connection before reading pauses"`
	MaxMessagePublishBufferSizeMB       int64 `key:"maxMessagePublishBufferSizeInMB" help:"unacknowledged publish bytes per broker, in MiB, before reading pauses"`

	// DispatcherMaxReadBatchSize is the most entries a subscription reads from storage at
	// once (dispatch reads ahead in batches of this size, bounded by consumer permits).
	DispatcherMaxReadBatchSize int `key:"dispatcherMaxReadBatchSize" help:"most entries a subscription reads from storage at once"`
	// Unacknowledged-message limits: a consumer (or a whole subscription) with this many
	// messages dispatched and not acknowledged gets nothing more until it acknowledges.
	// They bound the broker's per-subscription tracking memory. 0 disables a limit.
	MaxUnackedMessagesPerConsumer     int `key:"maxUnackedMessagesPerConsumer" help:"unacknowledged messages after which a consumer gets no more (0: no limit)"`
	MaxUnackedMessagesPerSubscription int `key:"maxUnackedMessagesPerSubscription" help:"unacknowledged messages after which a subscription dispatches no more (0: no limit)"`

	// AllowAutoSubscriptionCreation lets a consumer (or a producer's initial subscription)
	// create a durable subscription that does not exist; false refuses it with
	// SubscriptionNotFound, unless the topic's autoSubscriptionCreation policy allows it.
	// Dynamic.
	AllowAutoSubscriptionCreation bool `key:"allowAutoSubscriptionCreation" help:"create subscriptions on first subscribe (false: they must be created by the admin API)"`

	// SubscriptionKeySharedUseConsistentHashing spreads the keys of an AUTO_SPLIT Key_Shared
	// subscription over its consumers by a consistent-hash ring (true, Pulsar's default);
	// false halves hash ranges as consumers join (Pulsar's HashRangeAutoSplit selector,
	// which the Go client's CI config chooses and its TestConsumerKeyShared relies on).
	SubscriptionKeySharedUseConsistentHashing bool `key:"subscriptionKeySharedUseConsistentHashing" help:"AUTO_SPLIT Key_Shared by consistent hashing (false: by halving hash ranges)"`

	// ExposeTopicLevelMetricsInPrometheus exports per-topic series on /metrics; false
	// aggregates them per namespace, for deployments with many topics. Dynamic.
	ExposeTopicLevelMetricsInPrometheus bool `key:"exposeTopicLevelMetricsInPrometheus" help:"export per-topic metrics (false: per namespace only)"`

	// ExposeBrokerEntryMetadata sends each stored entry's broker entry metadata (PIP-70:
	// broker timestamp and index, internal/topics/index.go) to consumers that declared
	// supports_broker_entry_metadata; others never get it. Pulsar's default is false
	// because its entries carry the block only with interceptors configured; every entry
	// of ours carries it, and the index is the message's Kafka offset.
	ExposeBrokerEntryMetadata bool `key:"exposingBrokerEntryMetadataToClientEnabled" help:"send broker entry metadata (broker time, index) to consumers that support it"`

	// MaxConnections bounds client connections; a further one is answered ERROR NotAllowed
	// and closed. Bounded by default (Pulsar's default is unlimited): every connection holds
	// buffers and goroutines, and a client opening them in a loop must not exhaust memory.
	MaxConnections int `key:"brokerMaxConnections" help:"most client connections (0: unlimited)"`
	// MaxConcurrentLookupRequest bounds LOOKUP and PARTITIONED_METADATA requests in progress
	// across the broker; beyond it they fail with TooManyRequests (clients retry them).
	MaxConcurrentLookupRequest int `key:"maxConcurrentLookupRequest" help:"lookups and partitioned-metadata requests in progress at once; beyond it they fail with TooManyRequests"`
	// MaxPendingPublishRequestsPerConnection bounds SENDs read but not yet stored per
	// connection; at the limit the broker stops reading from the connection (TCP pushes
	// back), as Pulsar does.
	MaxPendingPublishRequestsPerConnection int `key:"maxPendingPublishRequestsPerConnection" help:"SENDs in flight to storage per connection before reading pauses"`
	// MaxPendingWriteBytesPerConnection bounds what the broker has queued for a client that
	// does not read: at the limit the connection stops reading commands and dispatch to its
	// consumers pauses until the client has read below it (our key; Pulsar relies on Netty's
	// write-buffer watermarks). A client that reads nothing for 60 s is disconnected.
	MaxPendingWriteBytesPerConnection int64 `key:"maxPendingWriteBytesPerConnection" help:"bytes queued for a client before its commands and deliveries pause"`
	// MaxProducersPerConnection / MaxConsumersPerConnection bound the producers and the
	// consumers one connection holds open at once; a further PRODUCER or SUBSCRIBE is
	// answered ProducerBusy / ConsumerBusy (the codes of Pulsar's maxProducersPerTopic and
	// maxConsumersPerTopic) and nothing else on the connection changes. Our keys, named after
	// Pulsar's per-connection ones: Pulsar has no such bound, so a client that creates
	// producers in a loop holds broker memory without end. A client with more than this
	// on one broker opens more connections per broker (Go: MaxConnectionsPerBroker, Java:
	// connectionsPerBroker).
	MaxProducersPerConnection int `key:"maxProducersPerConnection" help:"most producers open on one client connection (0: unlimited)"`
	MaxConsumersPerConnection int `key:"maxConsumersPerConnection" help:"most consumers open on one client connection (0: unlimited)"`

	// ForceDeleteNamespaceAllowed lets DELETE /admin/v2/namespaces/{t}/{ns}?force=true
	// delete a namespace with its topics; off, as in Pulsar, the request answers 405.
	ForceDeleteNamespaceAllowed bool `key:"forceDeleteNamespaceAllowed" help:"allow deleting a namespace with its topics (namespaces delete --force)"`
	// ForceDeleteTenantAllowed lets DELETE /admin/v2/tenants/{t}?force=true delete a tenant
	// with its namespaces, each as a forced namespace delete (so that needs
	// forceDeleteNamespaceAllowed too); off, as in Pulsar, the request answers 405. Both
	// are dynamic (brokers update-dynamic-config), as in Pulsar.
	ForceDeleteTenantAllowed bool `key:"forceDeleteTenantAllowed" help:"allow deleting a tenant with its namespaces (tenants delete --force)"`

	// EnablePprof serves Go's profiler under /debug/pprof/ on the HTTP port, for finding where
	// the time goes during a benchmark. Off by default: profiles expose internals.
	EnablePprof bool `key:"enablePprof" help:"serve /debug/pprof/ on the HTTP port"`

	// ManagedLedger passes the managedLedgerDefault* keys (and the other managed-ledger
	// keys) through to the topic logs this broker opens. dispatcherMaxReadBatchSize is
	// bound to both this struct and the managed ledger's, so one setting drives both.
	ManagedLedger ManagedLedgerConfig

	// Schema holds the schema registry's defaults and bounds (schemaCompatibilityStrategy, ...).
	Schema SchemaConfig
	// Policies holds the broker defaults of namespace/topic policies (policies.go).
	Policies PoliciesConfig
	// Delivery is batch-index acknowledgement and delayed delivery (delivery.go).
	Delivery DeliveryConfig
	// Kafka is the Kafka protocol front end (kafka.go: kafkaListeners, ...).
	Kafka KafkaConfig
	// Security is TLS listeners, authentication and authorization (security.go).
	Security SecurityConfig
	// Offload is tiered storage (offload.go).
	Offload OffloadConfig
	// Console is the web console under /ui (console.go).
	Console ConsoleConfig
	// Packages is the packages management API (packages.go).
	Packages PackagesConfig
	// Transaction is Pulsar transactions (transaction.go: transactionCoordinatorEnabled, ...).
	Transaction TransactionConfig
	// Iceberg is the lakehouse: topics as Iceberg tables, the REST catalog (iceberg.go).
	Iceberg IcebergConfig
}

// DefaultBrokerConfig returns Pulsar's broker.conf defaults.
func DefaultBrokerConfig() BrokerConfig {
	return BrokerConfig{
		ShutdownTimeoutMs:                         60_000,
		ClusterName:                               "standalone",
		BindAddress:                               "0.0.0.0",
		ServicePort:                               6650,
		WebServicePort:                            8080,
		MaxMessageSize:                            5 * 1024 * 1024,
		AllowAutoTopicCreation:                    true,
		ExposeBrokerEntryMetadata:                 true,
		AllowAutoTopicCreationType:                "non-partitioned",
		DefaultNumPartitions:                      1,
		KeepAliveIntervalSeconds:                  30,
		MaxPendingPublishBytesPerConnection:       32 << 20,
		MaxMessagePublishBufferSizeMB:             512,
		DispatcherMaxReadBatchSize:                100,
		MaxUnackedMessagesPerConsumer:             50000,
		MaxUnackedMessagesPerSubscription:         200000,
		MaxConnections:                            20000,
		MaxConcurrentLookupRequest:                50000,
		MaxPendingPublishRequestsPerConnection:    1000,
		MaxPendingWriteBytesPerConnection:         16 << 20,
		MaxProducersPerConnection:                 10000,
		MaxConsumersPerConnection:                 10000,
		ExposeTopicLevelMetricsInPrometheus:       true,
		SubscriptionKeySharedUseConsistentHashing: true,
		AllowAutoSubscriptionCreation:             true,
		ManagedLedger:                             DefaultManagedLedgerConfig(),
		Schema:                                    DefaultSchemaConfig(),
		Policies:                                  DefaultPoliciesConfig(),
		Delivery:                                  DefaultDeliveryConfig(),
		Kafka:                                     DefaultKafkaConfig(),
		Security:                                  DefaultSecurityConfig(),
		Console:                                   DefaultConsoleConfig(),
		Packages:                                  DefaultPackagesConfig(),
		Offload:                                   DefaultOffloadConfig(),
		Transaction:                               DefaultTransactionConfig(),
		Iceberg:                                   DefaultIcebergConfig(),
	}
}

// KeepAliveInterval is KeepAliveIntervalSeconds as a duration.
func (c *BrokerConfig) KeepAliveInterval() time.Duration {
	return time.Duration(c.KeepAliveIntervalSeconds) * time.Second
}

// Validate checks the broker settings.
func (c *BrokerConfig) Validate() error {
	return errors.Join(
		Between("brokerShutdownTimeoutMs", c.ShutdownTimeoutMs, 100, 3_600_000),
		NotEmpty("clusterName", c.ClusterName),
		NotEmpty("bindAddress", c.BindAddress),
		Between("brokerServicePort", c.ServicePort, -1, 65535), // -1: TLS listener only
		Between("webServicePort", c.WebServicePort, -1, 65535),
		Between("maxMessageSize", c.MaxMessageSize, 1024, 1<<30),
		OneOf("allowAutoTopicCreationType", c.AllowAutoTopicCreationType, "non-partitioned", "partitioned"),
		Between("defaultNumPartitions", c.DefaultNumPartitions, 1, 10000),
		Between("keepAliveIntervalSeconds", c.KeepAliveIntervalSeconds, 1, 3600),
		AtLeast("maxPendingPublishBytesPerConnection", c.MaxPendingPublishBytesPerConnection, int64(c.MaxMessageSize)),
		AtLeast("maxMessagePublishBufferSizeInMB", c.MaxMessagePublishBufferSizeMB, int64(1)),
		Between("dispatcherMaxReadBatchSize", c.DispatcherMaxReadBatchSize, 1, 10000),
		AtLeast("maxUnackedMessagesPerConsumer", c.MaxUnackedMessagesPerConsumer, 0),
		AtLeast("maxUnackedMessagesPerSubscription", c.MaxUnackedMessagesPerSubscription, 0),
		AtLeast("brokerMaxConnections", c.MaxConnections, 0),
		Between("maxConcurrentLookupRequest", c.MaxConcurrentLookupRequest, 1, 10_000_000),
		Between("maxPendingPublishRequestsPerConnection", c.MaxPendingPublishRequestsPerConnection, 1, 10_000_000),
		AtLeast("maxPendingWriteBytesPerConnection", c.MaxPendingWriteBytesPerConnection, int64(64<<10)),
		AtLeast("maxProducersPerConnection", c.MaxProducersPerConnection, 0),
		AtLeast("maxConsumersPerConnection", c.MaxConsumersPerConnection, 0),
		c.ManagedLedger.Validate(),
		c.Schema.Validate(),
		c.Policies.Validate(),
		c.Delivery.Validate(),
		c.Kafka.Validate(),
		c.Security.Validate(),
		c.Offload.Validate(),
		c.Transaction.Validate(),
		c.Iceberg.Validate(),
		c.Packages.Validate(),
	)
}
