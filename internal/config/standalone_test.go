package config

import (
	"errors"
	"testing"
)

func TestStandaloneMemoryDefaultsAndGCPercent(t *testing.T) {
	c := DefaultStandaloneConfig()
	c.DataDir = t.TempDir()
	if c.GCPercent != 50 || c.Broker.ManagedLedger.MaxReadSizeBytes != 2<<20 || c.Storage.WriteCacheMaxSizeMB != 16 {
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
