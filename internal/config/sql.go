package config

import (
	"errors"
	"runtime"
)

// SQLConfig is the SQL front end (internal/sql): MySQL-protocol queries over topics, in
// `magnetar sql-worker` and inside standalone. Keys are ours (Pulsar SQL's Trino settings
// have no broker-config names); the limits follow Trino's query.max-* ideas.
type SQLConfig struct {
	// Enabled runs the SQL server inside standalone (the sql-worker role always does).
	Enabled bool `key:"sqlEnabled" flag:"sql" help:"serve SQL over topics on sqlServicePort (standalone)"`
	// ServicePort is the MySQL protocol port; 0 picks a free port; -1 (standalone's
	// default) is 3306 when the broker is on 6650, else a free port.
	ServicePort int `key:"sqlServicePort" flag:"sql-port" help:"MySQL protocol port of the SQL server (0: any free port; -1 in standalone: 3306 when the broker port is 6650, else a free port)"`

	// QueryTimeoutSeconds cancels a query that runs longer.
	QueryTimeoutSeconds int `key:"sqlQueryTimeoutSeconds" help:"longest a SQL query may run, in seconds"`
	// MaxScannedBytes and MaxScannedRows cancel a query that reads more entry bytes or
	// messages from storage (0: no limit).
	MaxScannedBytes int64 `key:"sqlMaxScannedBytes" help:"most entry bytes one SQL query may read from storage (0: no limit)"`
	MaxScannedRows  int64 `key:"sqlMaxScannedRows" help:"most messages one SQL query may read from storage (0: no limit)"`
	// MaxConcurrentQueries refuses queries beyond this many running at once.
	MaxConcurrentQueries int `key:"sqlMaxConcurrentQueries" help:"SQL queries running at once; more are refused"`
	// MaxMemoryPerQueryMB bounds a query's scan buffers and (estimated) the rows the engine
	// holds for sorting, grouping and joins; beyond it the query is cancelled.
	MaxMemoryPerQueryMB int64 `key:"sqlMaxMemoryPerQueryMB" help:"memory one SQL query may hold, in MiB"`
	// SplitParallelism is how many splits (partition x ledger range) one query reads at
	// once; 0 is the number of CPUs.
	SplitParallelism int `key:"sqlSplitParallelism" help:"splits one SQL query reads in parallel (0: number of CPUs)"`
	// ScanThreads is the CPU budget of all scans together: at most this many scan workers
	// (of one query and across queries) read and decode at once, so concurrent queries
	// cannot take every core from the broker they run beside.
	ScanThreads int `key:"sqlScanThreads" help:"scan workers reading and decoding at once, all SQL queries together (default: number of CPUs)"`
	// MaxEntriesPerSplit cuts large ledgers into splits of at most this many entries.
	MaxEntriesPerSplit int64 `key:"sqlMaxEntriesPerSplit" help:"most entries in one split of a SQL scan"`
	// ReadBatchEntries is how many entries one storage read asks for (Pulsar SQL's
	// pulsar.max-entry-read-batch-size).
	ReadBatchEntries int `key:"sqlReadBatchEntries" help:"entries per storage read of a SQL scan"`
	// AllowCleartextWithoutTLS lets clients send passwords (Pulsar tokens) with the
	// mysql_clear_password method over plain TCP, as the Pulsar protocol's plain port sends
	// tokens; with authentication on, clients need --enable-cleartext-plugin
	// (allowCleartextPasswords=true in Go's driver).
	AllowCleartextWithoutTLS bool `key:"sqlAllowCleartextPasswordsWithoutTLS" help:"accept passwords (tokens) in clear text over plain TCP"`
	// RequireSecureTransport refuses logins that did not switch to TLS (MySQL's
	// require_secure_transport). TLS itself is offered whenever the broker's certificate
	// keys are set (tlsCertificateFilePath, tlsKeyFilePath, tlsTrustCertsFilePath).
	RequireSecureTransport bool `key:"sqlRequireSecureTransport" help:"refuse SQL connections that do not use TLS (needs tlsCertificateFilePath and tlsKeyFilePath)"`
}

// DefaultSQLConfig returns the SQL defaults: on in standalone, port 3306, 5 minutes per
// query, 8 at once, 256 MiB each, scans on as many workers as the process has CPUs.
func DefaultSQLConfig() SQLConfig {
	return SQLConfig{
		Enabled:                  true,
		ServicePort:              3306,
		QueryTimeoutSeconds:      300,
		MaxConcurrentQueries:     8,
		MaxMemoryPerQueryMB:      256,
		ScanThreads:              runtime.GOMAXPROCS(0),
		MaxEntriesPerSplit:       1_000,
		ReadBatchEntries:         100,
		AllowCleartextWithoutTLS: true,
	}
}

// Validate checks the SQL settings.
func (c *SQLConfig) Validate() error {
	return errors.Join(
		Between("sqlServicePort", c.ServicePort, -1, 65535),
		Between("sqlQueryTimeoutSeconds", c.QueryTimeoutSeconds, 1, 7*24*3600),
		AtLeast("sqlMaxScannedBytes", c.MaxScannedBytes, 0),
		AtLeast("sqlMaxScannedRows", c.MaxScannedRows, 0),
		Between("sqlMaxConcurrentQueries", c.MaxConcurrentQueries, 1, 10_000),
		Between("sqlMaxMemoryPerQueryMB", c.MaxMemoryPerQueryMB, 1, 1<<20),
		Between("sqlSplitParallelism", c.SplitParallelism, 0, 1024),
		Between("sqlScanThreads", c.ScanThreads, 1, 4096),
		Between("sqlMaxEntriesPerSplit", c.MaxEntriesPerSplit, 1, 1<<30),
		Between("sqlReadBatchEntries", c.ReadBatchEntries, 1, 10_000),
	)
}

// SQLWorkerConfig is `magnetar sql-worker`: the SQL server against a cluster's metadata
// store and bookies (Pulsar's `pulsar sql-worker`). It reads storage directly, so it needs
// the ledger client's and tiered storage's settings, and the brokers' security settings to
// authenticate users the same way.
type SQLWorkerConfig struct {
	MetadataStoreURL string `key:"metadataStoreUrl" flag:"metadata-url" help:"metadata store URL (etcd://host:2379,...)"`
	BindAddress      string `key:"bindAddress" help:"host the SQL listener binds to"`
	// WebServicePort serves /metrics and /status.html (Pulsar's sql-worker HTTP port is
	// 8081); -1 turns it off, 0 picks a free port.
	WebServicePort int `key:"webServicePort" flag:"http-port" help:"HTTP port for /metrics and /status.html (-1: off, 0: any free port)"`

	SQL           SQLConfig
	Ledger        LedgerClientConfig
	ManagedLedger ManagedLedgerConfig
	Offload       OffloadConfig
	Security      SecurityConfig
	Schema        SchemaConfig
	// MetadataTLS is how the worker reaches etcd over TLS (metadataStoreConfigPath).
	MetadataTLS MetadataClientTLSConfig
}

// DefaultSQLWorkerConfig returns the role's defaults.
func DefaultSQLWorkerConfig() SQLWorkerConfig {
	return SQLWorkerConfig{
		BindAddress: "0.0.0.0", WebServicePort: 8081, SQL: DefaultSQLConfig(), Ledger: DefaultLedgerClientConfig(),
		ManagedLedger: DefaultManagedLedgerConfig(), Offload: DefaultOffloadConfig(),
		Security: DefaultSecurityConfig(), Schema: DefaultSchemaConfig(),
	}
}

// Validate checks the role's settings.
func (c *SQLWorkerConfig) Validate() error {
	return errors.Join(
		NotEmpty("metadataStoreUrl", c.MetadataStoreURL),
		NotEmpty("bindAddress", c.BindAddress),
		Between("webServicePort", c.WebServicePort, -1, 65535),
		Between("sqlServicePort", c.SQL.ServicePort, 0, 65535),
		c.SQL.Validate(),
		c.Ledger.Validate(),
		c.ManagedLedger.Validate(),
		c.Offload.Validate(),
		c.Security.Validate(),
	)
}
