package config

import (
	"errors"
	"fmt"
	"path/filepath"
	"time"
)

// StandaloneConfig is what `magnetar standalone` runs: metadata, bookie, ledger client,
// managed ledgers and broker in one process with their data under one directory. It reuses
// the roles' own configs, so a key means the same in standalone as in a cluster role.
type StandaloneConfig struct {
	DataDir string `key:"dataDir" flag:"data-dir" help:"directory that holds all standalone data"`
	// MetadataStore chooses the metadata store: "local" (Pebble in the data directory, no
	// network, ready at once), "etcd" (an embedded etcd member that etcdctl can reach), or
	// "" to keep whichever the data directory already holds (local for a new one).
	MetadataStore string `key:"standaloneMetadataStore" flag:"metadata-store" help:"metadata store: local (Pebble, default for a new data directory), etcd (embedded member), or empty for whichever the data directory holds"`
	// MetadataQuotaBytes bounds the metadata held: writes beyond it fail (etcd's space
	// alarm). The local store keeps its data in memory, so this is also its memory bound.
	MetadataQuotaBytes int64 `key:"metadataQuotaBackendBytes" flag:"metadata-quota-backend-bytes" help:"metadata size at which writes are refused (the local store holds it in memory)"`
	// MetadataListenClient is the embedded etcd's client URL; tools like etcdctl can use it.
	MetadataListenClient string `key:"standaloneMetadataListen" flag:"metadata-listen" help:"client URL of the embedded etcd member (port 0: any free port)"`
	// MetadataListenPeer is the embedded etcd's peer URL (single member; nothing dials it).
	MetadataListenPeer string `key:"standaloneMetadataPeer" flag:"metadata-peer" help:"peer URL of the embedded etcd member"`
	// BookieAddress is where the in-process bookie listens; only the ledger client dials it.
	BookieAddress string `key:"standaloneBookieAddress" flag:"bookie-address" help:"address of the in-process bookie (port 0: any free port)"`

	// MemoryLimitMB is the Go runtime's soft memory limit for the process, in MiB; 0 derives
	// it from the configured caches (MemoryLimitBytes). GOMEMLIMIT in the environment wins.
	MemoryLimitMB int64 `key:"standaloneMemoryLimitMB" flag:"memory-limit-mb" help:"soft memory limit of the process in MiB (0: the caches plus 96 MiB; GOMEMLIMIT wins)"`
	// GCPercent is the Go garbage collector's target (GOGC) for the process; 0 keeps the
	// runtime's default of 100. GOGC in the environment wins. The standalone's live heap is
	// small next to its caches' bounds, so its RSS is mostly the collector's slack: at 50
	// the peak of a catch-up drain fell from 2.1-2.9x to 1.8x NATS's, at the same rates.
	GCPercent int `key:"standaloneGCPercent" flag:"gc-percent" help:"garbage collector target percent (GOGC) of the process (0: Go's default 100; GOGC wins)"`

	// FunctionsWorkerEnabled runs the Pulsar Functions worker in the process (Pulsar's
	// standalone runs one unless --no-functions-worker).
	FunctionsWorkerEnabled bool `key:"functionsWorkerEnabled" flag:"functions-worker" help:"run the functions worker (false: like pulsar standalone --no-functions-worker)"`
	Functions              FunctionsWorkerConfig

	// SQL serves SQL over topics on its own port (sqlEnabled, sqlServicePort).
	SQL SQLConfig

	// Broker includes the managed-ledger keys (Broker.ManagedLedger).
	Broker  BrokerConfig
	Storage BookieStorageConfig
	Ledger  LedgerClientConfig
}

// DefaultStandaloneConfig returns the standalone defaults: Pulsar's standalone.conf values
// where they differ from a broker's (E/Qw/Qa 1/1/1, cluster "standalone").
func DefaultStandaloneConfig() StandaloneConfig {
	c := StandaloneConfig{
		DataDir:              "./data",
		MetadataQuotaBytes:   512 << 20,
		MetadataListenClient: "http://127.0.0.1:2379",
		MetadataListenPeer:   "http://127.0.0.1:2380",
		BookieAddress:        "127.0.0.1:3181",
		Broker:               DefaultBrokerConfig(),
		Storage:              DefaultBookieStorageConfig(),
		Ledger:               DefaultLedgerClientConfig(),

		FunctionsWorkerEnabled: true,
		Functions:              DefaultFunctionsWorkerConfig(),
		SQL:                    DefaultSQLConfig(),
	}
	// -1: 3306 when the broker is on its default port, else a free port (SQLPort), so tests
	// and a second standalone on other ports do not all reach for 3306.
	c.SQL.ServicePort = -1
	c.Broker.ClusterName = "standalone"
	// Pulsar's broker gives its BookKeeper client 30 s per add and read
	// (bookkeeperClientTimeoutInSeconds=30), not BookKeeper's own 5 s. In a standalone it
	// matters most: its one bookie is in the process, so a slow add is a queue, never a lost
	// bookie, and an ensemble change can never find a replacement. With 5 s a burst (10,000
	// topics' first cursor flushes at once, on a loaded machine) timed adds out and failed
	// their ledgers, and the rollovers and cursor-ledger switches that followed were more
	// of the same work: ~5,000 failed ledgers within a minute of a 10,000-topic run
	// (docs/bench-compare-scaling.md).
	c.Ledger.AddEntryTimeout, c.Ledger.ReadEntryTimeout = 30*time.Second, 30*time.Second
	// Transactions cost nothing until a client uses them; one coordinator serves one process.
	c.Broker.Transaction.CoordinatorEnabled = true
	c.Broker.Transaction.NumCoordinators = 1
	ml := &c.Broker.ManagedLedger
	ml.EnsembleSize, ml.WriteQuorum, ml.AckQuorum = 1, 1, 1
	// Smaller caches than a dedicated broker's and bookie's: one process holds both, the
	// broker's entry cache already serves tailing reads (so the bookie's read-ahead cache
	// only serves catch-up), and a small machine is the standalone's home. Against 256/64/64
	// MiB this cut peak RSS from 205-325 to 156-170 MiB at 100 B max rate and from 541-587
	// to 255-258 MiB in a 128 MiB catch-up, throughput within the (large) noise of a shared
	// machine (docs/benchmarks-history.md, "Performance work"). The write cache went from 32 to 16
	// MiB later: it is flushed at half full, so at 100 B max rate it held 16 MiB for
	// nothing; W1 D1 peak RSS fell from 1.92x to 1.60x NATS's with no throughput change
	// (docs/benchmarks-history.md, "Standalone write cache").
	ml.CacheSizeMB = 64
	// 2 MiB reads (Pulsar's dispatcherMaxReadSizeBytes is 5 MiB) drained a 128 MiB backlog
	// 1.5x faster here; with the lower GC target the peak stays below NATS's 2x.
	ml.MaxReadSizeBytes = 2 << 20
	c.GCPercent = 50
	// 24 MiB, not the 16 that sufficed for small messages: the bookie takes entries of up to
	// a quarter of its write cache, so 16 MiB refused every message over 4 MiB although
	// maxMessageSize is 5 MiB, and the managed ledger retried the add forever (found by the
	// Python client's chunking at 5 MiB chunks). Validate holds the two together.
	c.Storage.WriteCacheMaxSizeMB = 24
	c.Storage.ReadAheadCacheMaxSizeMB = 16
	// Directories follow DataDir unless set explicitly (see ApplyDataDir).
	c.Storage.JournalDirectories, c.Storage.LedgerDirectories = nil, nil
	return c
}

// StandaloneMemoryHeadroom is what a standalone needs beyond its configured caches: the
// embedded etcd member, Pebble's memtables and block cache, connection buffers, goroutine
// stacks and the garbage collector's slack.
const StandaloneMemoryHeadroom = 96 << 20

// MemoryLimitBytes is the soft memory limit: MemoryLimitMB, or the managed-ledger cache,
// the bookie's write and read caches and journal queue plus StandaloneMemoryHeadroom. Without
// it the heap grows to twice what is live (GOGC=100) before a collection.
func (c *StandaloneConfig) MemoryLimitBytes() int64 {
	if c.MemoryLimitMB > 0 {
		return c.MemoryLimitMB << 20
	}
	return (c.Broker.ManagedLedger.CacheSizeMB+int64(c.Storage.WriteCacheMaxSizeMB)+int64(c.Storage.ReadAheadCacheMaxSizeMB))<<20 +
		c.Storage.JournalQueueSizeBytes + StandaloneMemoryHeadroom
}

// ApplyDataDir fills the directories left unset from DataDir.
func (c *StandaloneConfig) ApplyDataDir() {
	if len(c.Storage.JournalDirectories) == 0 {
		c.Storage.JournalDirectories = []string{filepath.Join(c.DataDir, "bookie", "journal")}
	}
	if len(c.Storage.LedgerDirectories) == 0 {
		c.Storage.LedgerDirectories = []string{filepath.Join(c.DataDir, "bookie", "ledgers")}
	}
}

// Metadata stores of a standalone (standaloneMetadataStore).
const (
	MetadataStoreLocal = "local"
	MetadataStoreEtcd  = "etcd"
)

// entryOverhead is what an entry adds to a message at most: the frame's allowance beyond
// maxMessageSize (10 KiB) and the ledger entry's header, rounded up.
const entryOverhead = 64 << 10

// checkEntryFitsWriteCache refuses a write cache too small for the largest message: the
// in-process bookie refuses entries over a quarter of its write cache
// (bookie/storage/disk.go), so such a message could never be stored.
func (c *StandaloneConfig) checkEntryFitsWriteCache() error {
	need := int64(c.Broker.MaxMessageSize) + entryOverhead
	if int64(c.Storage.WriteCacheMaxSizeMB)<<20/4 >= need {
		return nil
	}
	minMB := (4*need + 1<<20 - 1) >> 20
	return &FieldError{Key: "dbStorage_writeCacheMaxSizeMb", Value: c.Storage.WriteCacheMaxSizeMB,
		Reason: fmt.Sprintf("must be at least %d with maxMessageSize=%d: the bookie takes entries of up to a quarter of its write cache", minMB, c.Broker.MaxMessageSize)}
}

// MetadataDir is where the embedded etcd member keeps its data (its member/ directory);
// LocalMetadataDir, below it, is the local store's Pebble database.
func (c *StandaloneConfig) MetadataDir() string { return filepath.Join(c.DataDir, "metadata") }

// LocalMetadataDir is the local metadata store's directory.
func (c *StandaloneConfig) LocalMetadataDir() string { return filepath.Join(c.MetadataDir(), "store") }

// EtcdMemberDir is what an embedded etcd member creates in MetadataDir.
func (c *StandaloneConfig) EtcdMemberDir() string { return filepath.Join(c.MetadataDir(), "member") }

// Validate checks the standalone settings and every embedded role's.
func (c *StandaloneConfig) Validate() error {
	c.ApplyDataDir()
	return errors.Join(
		c.checkEntryFitsWriteCache(),
		NotEmpty("dataDir", c.DataDir),
		OneOf("standaloneMetadataStore", c.MetadataStore, "", MetadataStoreLocal, MetadataStoreEtcd),
		Between("metadataQuotaBackendBytes", c.MetadataQuotaBytes, 1<<20, maxQuotaBackendBytes),
		NotEmpty("standaloneMetadataListen", c.MetadataListenClient),
		NotEmpty("standaloneMetadataPeer", c.MetadataListenPeer),
		CheckHostPort("standaloneBookieAddress", c.BookieAddress),
		AtLeast("standaloneMemoryLimitMB", c.MemoryLimitMB, 0),
		Between("standaloneGCPercent", c.GCPercent, 0, 1000),
		c.Broker.Validate(),
		c.Storage.Validate(),
		c.Ledger.Validate(),
		c.Functions.Validate(),
		c.SQL.Validate(),
	)
}

// SQLPort is the port the SQL server listens on: sqlServicePort, or for -1 the MySQL
// default 3306 when the broker listens on its default 6650, else a free port (the ready
// log line names it).
func (c *StandaloneConfig) SQLPort() int {
	if c.SQL.ServicePort >= 0 {
		return c.SQL.ServicePort
	}
	if c.Broker.ServicePort != DefaultBrokerConfig().ServicePort {
		return 0
	}
	return 3306
}
