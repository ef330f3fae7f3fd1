package config

import (
	"errors"
	"strings"
	"time"
)

// BookieConfig is what `magnetar bookie` runs: the bookie's network side (listener, limits,
// registration, metrics). Its storage settings (journal, ledger directories, caches) are in
// Storage. Keys follow BookKeeper's bk_server.conf where one exists.
type BookieConfig struct {
	// ListenAddress is where the bookie accepts clients (host:port; port 0 picks a free one).
	// Default 127.0.0.1:3181, BookKeeper's bookiePort.
	ListenAddress string `key:"bookieAddress" flag:"listen" help:"address the bookie listens on, host:port"`
	// AdvertisedAddress is the host:port registered for clients to dial; empty means the
	// listen address (with the host name when the listen host is a wildcard).
	AdvertisedAddress string `key:"advertisedAddress" help:"host:port clients dial (default: the listen address)"`
	// Rack places the bookie for rack-aware ensemble placement, e.g. "/rack-a"; empty = default rack.
	Rack string `key:"rack" help:"rack of this bookie for ensemble placement, e.g. /rack-a"`
	// MetadataStoreURL is where the bookie registers (etcd://h:p,... or memory://); empty
	// disables registration (a bookie used directly by address, as in tests and perf runs).
	MetadataStoreURL string `key:"metadataStoreUrl" flag:"metadata-url" help:"metadata store URL (etcd://host:2379,... ); empty = no registration"`
	// MetadataSessionTimeoutMillis is the registration session's TTL: a bookie that stops
	// heartbeating disappears from the available list after this long (Pulsar's default 30 s).
	MetadataSessionTimeoutMillis int64 `key:"metadataStoreSessionTimeoutMillis" help:"registration session timeout in milliseconds"`
	// MaxFrameSizeBytes bounds every frame received or sent (BookKeeper's nettyMaxFrameSizeBytes).
	MaxFrameSizeBytes int `key:"nettyMaxFrameSizeBytes" help:"largest protocol frame in bytes"`
	// MaxInFlightRequestsPerConnection bounds requests read from one connection and not yet
	// answered; at the bound the bookie stops reading that connection (TCP backpressure).
	MaxInFlightRequestsPerConnection int `key:"maxInFlightRequestsPerConnection" help:"requests in flight per connection before the bookie stops reading it"`
	// MaxInFlightBytesPerConnection bounds the bytes of those requests and their responses.
	// Must be at least nettyMaxFrameSizeBytes so one largest frame always fits.
	MaxInFlightBytesPerConnection int64 `key:"maxInFlightBytesPerConnection" help:"request+response bytes in flight per connection before the bookie stops reading it"`
	// MaxConnections bounds client connections; more are closed at accept. With the two
	// limits above it bounds the server's buffered memory.
	MaxConnections int `key:"maxConnections" help:"client connections the bookie accepts at once"`
	// MaxLongPollTimeout caps the wait a WAIT_LAC request may ask for.
	MaxLongPollTimeout time.Duration `key:"maxLongPollTimeout" help:"longest wait a long-poll read-LAC may ask for"`
	// ProcessShutdownTimeoutMs bounds the whole shutdown of `magnetar bookie` after SIGTERM
	// (deregistration, draining, the auditor, closing the store), the bookie's counterpart of
	// Pulsar's brokerShutdownTimeoutMs: it exits by then whatever is unreachable.
	ProcessShutdownTimeoutMs int64 `key:"bookieShutdownTimeoutMs" help:"longest clean shutdown after SIGTERM, in milliseconds; the process exits by then"`
	// ShutdownTimeout bounds how long a clean shutdown waits for in-flight requests.
	ShutdownTimeout time.Duration `key:"shutdownTimeout" help:"how long shutdown waits for in-flight requests"`
	// MetricsAddress serves Prometheus /metrics over HTTP (BookKeeper's prometheusStatsHttpPort,
	// there 8000); empty = off, as standalone and the broker serve metrics on their own port.
	MetricsAddress string `key:"prometheusStatsHttpAddress" flag:"metrics-listen" help:"host:port for the /metrics endpoint (e.g. :8000); empty = off"`

	// Storage is the journal, caches and directories (internal/bookie/storage).
	Storage BookieStorageConfig

	// AutoRecoveryDaemonEnabled runs the auditor in this bookie process (BookKeeper's
	// autoRecoveryDaemonEnabled): the bookies elect one auditor through the metadata store,
	// which re-replicates the fragments of bookies gone longer than lostBookieRecoveryDelay.
	AutoRecoveryDaemonEnabled bool `key:"autoRecoveryDaemonEnabled" help:"run the auto-recovery auditor in this bookie (needs metadataStoreUrl)"`
	// Ledger configures the auditor's ledger client (timeouts, lostBookieRecoveryDelay).
	Ledger LedgerClientConfig

	// TLS is the bookie's TLS listener and client-certificate requirement (security.go).
	TLS BookieTLSConfig
	// MetadataTLS is how the bookie reaches etcd over TLS (metadataStoreConfigPath).
	MetadataTLS MetadataClientTLSConfig
}

// DefaultBookieConfig returns the bookie defaults.
func DefaultBookieConfig() BookieConfig {
	return BookieConfig{
		ListenAddress:                    "127.0.0.1:3181",
		MetadataSessionTimeoutMillis:     30_000,
		MaxFrameSizeBytes:                5_253_120,
		MaxInFlightRequestsPerConnection: 10_000,
		MaxInFlightBytesPerConnection:    32 << 20,
		MaxConnections:                   1024,
		MaxLongPollTimeout:               2 * time.Minute,
		ShutdownTimeout:                  5 * time.Second,
		ProcessShutdownTimeoutMs:         30_000,
		Storage:                          DefaultBookieStorageConfig(),
		AutoRecoveryDaemonEnabled:        true,
		Ledger:                           DefaultLedgerClientConfig(),
	}
}

// Validate checks the bookie settings, naming each bad key and its bound.
func (c *BookieConfig) Validate() error {
	errs := []error{
		CheckHostPort("bookieAddress", c.ListenAddress),
		Between("metadataStoreSessionTimeoutMillis", c.MetadataSessionTimeoutMillis, 1000, 600_000),
		Between("nettyMaxFrameSizeBytes", c.MaxFrameSizeBytes, 1024, 1<<30),
		Between("maxInFlightRequestsPerConnection", c.MaxInFlightRequestsPerConnection, 1, 1_000_000),
		AtLeast("maxInFlightBytesPerConnection", c.MaxInFlightBytesPerConnection, int64(c.MaxFrameSizeBytes)),
		Between("maxConnections", c.MaxConnections, 1, 1_000_000),
		Between("maxLongPollTimeout", c.MaxLongPollTimeout, time.Millisecond, time.Hour),
		Between("shutdownTimeout", c.ShutdownTimeout, 0, 10*time.Minute),
		Between("bookieShutdownTimeoutMs", c.ProcessShutdownTimeoutMs, 100, 3_600_000),
		c.Storage.Validate(),
	}
	if c.AdvertisedAddress != "" {
		errs = append(errs, CheckHostPort("advertisedAddress", c.AdvertisedAddress))
	}
	if c.MetricsAddress != "" {
		errs = append(errs, CheckHostPort("prometheusStatsHttpAddress", c.MetricsAddress))
	}
	if u := c.MetadataStoreURL; u != "" && !strings.HasPrefix(u, "etcd://") && !strings.HasPrefix(u, "memory://") {
		errs = append(errs, &FieldError{Key: "metadataStoreUrl", Value: u, Reason: "must start with etcd:// or memory://"})
	}
	errs = append(errs, c.Ledger.Validate(), c.TLS.Validate())
	return errors.Join(errs...)
}
