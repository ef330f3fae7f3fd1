package config

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestStandaloneMemoryDefaultsAndGCPercent(t *testing.T) {
	c := DefaultStandaloneConfig()
	c.DataDir = t.TempDir()
	if c.GCPercent != 50 || c.Broker.ManagedLedger.MaxReadSizeBytes != 2<<20 || c.Storage.WriteCacheMaxSizeMB != 24 {
		t.Fatalf("standalone memory defaults: gc %d, read size %d, write cache %d",
			c.GCPercent, c.Broker.ManagedLedger.MaxReadSizeBytes, c.Storage.WriteCacheMaxSizeMB)
	}
	if err := c.Validate(); err != nil {
		t.Fatalf("defaults invalid: %v", err)
	}
	for _, bad := range []int{-1, 1001} {
		c.GCPercent = bad
		var fe *FieldError
		if err := c.Validate(); !errors.As(err, &fe) || fe.Key != "standaloneGCPercent" {
			t.Fatalf("standaloneGCPercent %d: %v", bad, err)
		}
	}
}

// The default write cache holds a maxMessageSize message (the bookie takes a quarter of it
// per entry), and a larger maxMessageSize without a larger cache is refused with the least
// that works. Regression: 16 MiB refused 5 MiB messages and the add was retried forever.
func TestStandaloneWriteCacheHoldsTheLargestMessage(t *testing.T) {
	c := DefaultStandaloneConfig()
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	if int64(c.Storage.WriteCacheMaxSizeMB)<<20/4 < int64(c.Broker.MaxMessageSize)+entryOverhead {
		t.Fatalf("default write cache %d MiB cannot take a %d-byte message", c.Storage.WriteCacheMaxSizeMB, c.Broker.MaxMessageSize)
	}
	c.Broker.MaxMessageSize = 10 << 20
	err := c.Validate()
	if err == nil || !strings.Contains(err.Error(), "dbStorage_writeCacheMaxSizeMb=24: must be at least 41 with maxMessageSize=10485760") {
		t.Fatalf("got %v", err)
	}
	c.Storage.WriteCacheMaxSizeMB = 41
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
}

// A standalone's ledger client waits as long as Pulsar's broker does for its one bookie
// (bookkeeperClientTimeoutInSeconds=30); other roles keep BookKeeper's 5 s
// (addEntryTimeout and readEntryTimeout still set either).
func TestStandaloneBookieTimeouts(t *testing.T) {
	c := DefaultStandaloneConfig()
	if c.Ledger.AddEntryTimeout != 30*time.Second || c.Ledger.ReadEntryTimeout != 30*time.Second {
		t.Fatalf("standalone add/read timeouts %v/%v, want 30s", c.Ledger.AddEntryTimeout, c.Ledger.ReadEntryTimeout)
	}
	if d := DefaultLedgerClientConfig(); d.AddEntryTimeout != 5*time.Second {
		t.Fatalf("ledger client default add timeout %v, want BookKeeper's 5s", d.AddEntryTimeout)
	}
	c.DataDir = t.TempDir()
	if err := c.Validate(); err != nil {
		t.Fatalf("defaults invalid: %v", err)
	}
}
