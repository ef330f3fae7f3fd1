package storage_test

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/magnetar-io/magnetar/internal/bookie/storage"
	"github.com/magnetar-io/magnetar/internal/bookie/storage/storagetest"
	"github.com/magnetar-io/magnetar/internal/bookie/storage/vfs"
	"github.com/magnetar-io/magnetar/internal/config"
)

// testConfig is a small, fast configuration under dir.
func testConfig(dir string) config.BookieStorageConfig {
	c := config.DefaultBookieStorageConfig()
	c.JournalDirectories = []string{filepath.Join(dir, "journal")}
	c.LedgerDirectories = []string{filepath.Join(dir, "ledgers")}
	c.JournalPreAllocSizeMB = 1
	c.WriteCacheMaxSizeMB = 8
	c.ReadAheadCacheMaxSizeMB = 4
	c.FlushInterval = 50 * time.Millisecond
	c.DiskCheckInterval = 20 * time.Millisecond
	c.GCWaitTime = time.Hour
	return c
}

func openTest(t testing.TB, cfg config.BookieStorageConfig, fs vfs.FS) *storage.Disk {
	t.Helper()
	if fs == nil {
		fs = vfs.Default()
	}
	d, err := storage.OpenWithFS(cfg, fs, nil, nil)
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	return d
}

func TestDiskConformance(t *testing.T) {
	storagetest.Run(t, func(t *testing.T) storage.Storage { return openTest(t, testConfig(t.TempDir()), nil) })
}

// Without fsync (benchmarks only) the rules are the same.
func TestDiskConformanceNoSync(t *testing.T) {
	storagetest.Run(t, func(t *testing.T) storage.Storage {
		c := testConfig(t.TempDir())
		c.JournalSyncData = false
		return openTest(t, c, nil)
	})
}
