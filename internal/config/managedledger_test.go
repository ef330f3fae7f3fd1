package config

import (
	"strings"
	"testing"
)

func TestManagedLedgerConfigValidate(t *testing.T) {
	c := DefaultManagedLedgerConfig()
	if err := c.Validate(); err != nil {
		t.Fatalf("defaults invalid: %v", err)
	}
	c.WriteQuorum = 3 // > ensemble 2
	c.MarkDeleteRateLimit = 0
	err := c.Validate()
	if err == nil || !strings.Contains(err.Error(), "managedLedgerDefaultWriteQuorum") || !strings.Contains(err.Error(), "managedLedgerDefaultMarkDeleteRateLimit") {
		t.Fatalf("want both bad keys named, got %v", err)
	}
	if _, err := Bind(nil, &c); err != nil {
		t.Fatalf("bind: %v", err)
	}
}
