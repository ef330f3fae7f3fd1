package config

import (
	"errors"
	"time"
)

// BookieStorageConfig configures a bookie's ledger storage (internal/bookie/storage): the
// journal (WAL) with group commit, the write cache and its flusher, entry logs, the read
// cache with read-ahead, garbage collection and the disk checker. Key names are
// BookKeeper's (conf/bk_server.conf) where one exists; BookKeeper's millisecond and second
// integers become Go durations here (journalMaxGroupWaitMSec -> journalMaxGroupWait).
// None of the settings reload: they are read once when the storage opens.
type BookieStorageConfig struct {
	// JournalDirectories holds the journal (WAL) files. Exactly one directory for now; put
	// it on a different disk from the ledger directory to isolate fsync latency.
	JournalDirectories []string `key:"journalDirectories" help:"journal (WAL) directory; exactly one"`
	// LedgerDirectories holds entry logs, the Pebble index and the cookie. Exactly one.
	LedgerDirectories []string `key:"ledgerDirectories" help:"ledger storage directory (entry logs and index); exactly one"`

	// JournalSyncData fdatasyncs the journal before acknowledging an add. false acknowledges
	// after write(2) only and can lose acknowledged entries on power loss: benchmarks only.
	JournalSyncData bool `key:"journalSyncData" help:"fdatasync the journal before acknowledging adds (false only for benchmarks)"`
	// JournalMaxGroupWait bounds how long the oldest queued add waits for its group commit.
	JournalMaxGroupWait time.Duration `key:"journalMaxGroupWait" help:"max time an add waits for its journal group commit"`
	// JournalBufferedWritesThreshold ends a group early once this many bytes are queued.
	JournalBufferedWritesThreshold int64 `key:"journalBufferedWritesThreshold" help:"bytes that end a journal group commit early"`
	// JournalQueueSizeBytes bounds the journal's in-memory queue; adds block beyond it.
	// Recycled batch buffers add at most twice this.
	JournalQueueSizeBytes int64 `key:"journalQueueSizeBytes" help:"max bytes of adds queued for the journal writer (adds block beyond)"`
	// JournalMaxSizeMB rotates the journal file past this size.
	JournalMaxSizeMB int64 `key:"journalMaxSizeMB" help:"journal file size (MiB) that triggers rotation"`
	// JournalPreAllocSizeMB is the preallocation step of journal files, so appends do not
	// change the file size (and fdatasync need not write metadata).
	JournalPreAllocSizeMB int64 `key:"journalPreAllocSizeMB" help:"journal preallocation step (MiB)"`

	// WriteCacheMaxSizeMB bounds the write cache (both halves: the one taking adds and the
	// one being flushed; payload chunks plus ~96 bytes per entry). Adds block while it is
	// full. A single entry may be at most a quarter of it.
	WriteCacheMaxSizeMB int64 `key:"dbStorage_writeCacheMaxSizeMb" help:"write cache size (MiB); adds block while it is full"`
	// ReadAheadCacheMaxSizeMB bounds the read cache filled by read-ahead.
	ReadAheadCacheMaxSizeMB int64 `key:"dbStorage_readAheadCacheMaxSizeMb" help:"read cache size (MiB)"`
	// ReadAheadCacheBatchSize is how many following entries of the same ledger a read miss
	// loads into the read cache.
	ReadAheadCacheBatchSize int `key:"dbStorage_readAheadCacheBatchSize" help:"entries read ahead on a read-cache miss"`
	// FlushInterval flushes the write cache at least this often even when it is not half full.
	FlushInterval time.Duration `key:"flushInterval" help:"max time between write-cache flushes (checkpoints)"`
	// EntryLogSizeLimit rolls the entry log past this many bytes (at most 4 GiB: the index
	// stores 32-bit offsets).
	EntryLogSizeLimit int64 `key:"logSizeLimit" help:"entry log size (bytes) that triggers a new log"`
	// FlushEntryLogBytes starts writeback of the entry log every this many bytes during a
	// flush and waits for the previous chunk, so a flush never queues more than about this
	// much in front of the journal's fdatasync on a shared disk; 0 = one burst at the end.
	FlushEntryLogBytes int64 `key:"flushEntrylogBytes" help:"entry log bytes between writeback starts during a flush (0 = off)"`

	// GCWaitTime is the garbage collector's period: entry logs whose ledgers are all deleted
	// are removed.
	GCWaitTime time.Duration `key:"gcWaitTime" help:"period of entry-log garbage collection"`
	// MinorCompactionThreshold compacts logs with less than this fraction of live bytes every
	// MinorCompactionInterval; 0 disables minor compaction.
	MinorCompactionThreshold float64       `key:"minorCompactionThreshold" help:"live fraction under which a minor compaction rewrites a log (0 = off)"`
	MinorCompactionInterval  time.Duration `key:"minorCompactionInterval" help:"period of minor compaction"`
	// MajorCompactionThreshold and MajorCompactionInterval: the same, less often, higher bar.
	MajorCompactionThreshold float64       `key:"majorCompactionThreshold" help:"live fraction under which a major compaction rewrites a log (0 = off)"`
	MajorCompactionInterval  time.Duration `key:"majorCompactionInterval" help:"period of major compaction"`

	// DiskUsageThreshold turns the bookie read-only when a directory's disk is this full.
	DiskUsageThreshold float64 `key:"diskUsageThreshold" help:"disk usage fraction that turns the bookie read-only"`
	// DiskUsageLwmThreshold: a read-only bookie becomes writable again below this usage.
	DiskUsageLwmThreshold float64 `key:"diskUsageLwmThreshold" help:"disk usage fraction under which a read-only bookie becomes writable again"`
	// DiskCheckInterval is the period of the disk checker (usage, and a write probe after
	// write errors).
	DiskCheckInterval time.Duration `key:"diskCheckInterval" help:"period of the disk usage and write-probe check"`
}

// DefaultBookieStorageConfig returns BookKeeper's defaults where they fit a small machine.
func DefaultBookieStorageConfig() BookieStorageConfig {
	return BookieStorageConfig{
		JournalDirectories:             []string{"./data/bookie/journal"},
		LedgerDirectories:              []string{"./data/bookie/ledgers"},
		JournalSyncData:                true,
		JournalMaxGroupWait:            time.Millisecond,
		JournalBufferedWritesThreshold: 512 << 10,
		JournalQueueSizeBytes:          8 << 20,
		JournalMaxSizeMB:               2048,
		JournalPreAllocSizeMB:          16,
		WriteCacheMaxSizeMB:            64,
		ReadAheadCacheMaxSizeMB:        64,
		ReadAheadCacheBatchSize:        100,
		FlushInterval:                  10 * time.Second,
		EntryLogSizeLimit:              1 << 30,
		FlushEntryLogBytes:             2 << 20,
		GCWaitTime:                     10 * time.Minute,
		MinorCompactionThreshold:       0.2,
		MinorCompactionInterval:        time.Hour,
		MajorCompactionThreshold:       0.8,
		MajorCompactionInterval:        24 * time.Hour,
		DiskUsageThreshold:             0.95,
		DiskUsageLwmThreshold:          0.90,
		DiskCheckInterval:              10 * time.Second,
	}
}

// Validate checks the storage settings and names every bad key with its bound.
func (c *BookieStorageConfig) Validate() error {
	errs := []error{
		oneDir("journalDirectories", c.JournalDirectories),
		oneDir("ledgerDirectories", c.LedgerDirectories),
		Between("journalMaxGroupWait", c.JournalMaxGroupWait, 0, time.Second),
		Between("journalBufferedWritesThreshold", c.JournalBufferedWritesThreshold, 4<<10, 64<<20),
		Between("journalQueueSizeBytes", c.JournalQueueSizeBytes, 1<<20, 1<<30),
		Between("journalMaxSizeMB", c.JournalMaxSizeMB, 1, 64<<10),
		Between("journalPreAllocSizeMB", c.JournalPreAllocSizeMB, 1, 1024),
		Between("dbStorage_writeCacheMaxSizeMb", c.WriteCacheMaxSizeMB, 4, 64<<10),
		Between("dbStorage_readAheadCacheMaxSizeMb", c.ReadAheadCacheMaxSizeMB, 0, 64<<10),
		Between("dbStorage_readAheadCacheBatchSize", c.ReadAheadCacheBatchSize, 0, 100000),
		Between("flushInterval", c.FlushInterval, time.Millisecond, time.Hour),
		Between("logSizeLimit", c.EntryLogSizeLimit, 1<<20, 4<<30-1),
		Between("flushEntrylogBytes", c.FlushEntryLogBytes, 0, 1<<30),
		Between("gcWaitTime", c.GCWaitTime, time.Millisecond, 24*time.Hour),
		Between("minorCompactionThreshold", c.MinorCompactionThreshold, 0, 1),
		AtLeast("minorCompactionInterval", c.MinorCompactionInterval, time.Millisecond),
		Between("majorCompactionThreshold", c.MajorCompactionThreshold, 0, 1),
		AtLeast("majorCompactionInterval", c.MajorCompactionInterval, time.Millisecond),
		Between("diskUsageThreshold", c.DiskUsageThreshold, 0.01, 1),
		Between("diskUsageLwmThreshold", c.DiskUsageLwmThreshold, 0.01, c.DiskUsageThreshold),
		Between("diskCheckInterval", c.DiskCheckInterval, time.Millisecond, time.Hour),
	}
	if c.JournalQueueSizeBytes < 2*c.JournalBufferedWritesThreshold {
		errs = append(errs, &FieldError{Key: "journalQueueSizeBytes", Value: c.JournalQueueSizeBytes,
			Reason: "must be at least twice journalBufferedWritesThreshold"})
	}
	return errors.Join(errs...)
}

// JournalDir is the one journal directory.
func (c *BookieStorageConfig) JournalDir() string { return c.JournalDirectories[0] }

// LedgerDir is the one ledger directory.
func (c *BookieStorageConfig) LedgerDir() string { return c.LedgerDirectories[0] }

func oneDir(key string, dirs []string) error {
	if len(dirs) != 1 || dirs[0] == "" {
		return &FieldError{Key: key, Value: dirs, Reason: "must name exactly one directory"}
	}
	return nil
}
