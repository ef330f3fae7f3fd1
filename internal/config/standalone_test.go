package config

import (
	"errors"
	"strings"
	"testing"
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
