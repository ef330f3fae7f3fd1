package config

import (
	"strings"
	"testing"
	"time"
)

func TestBookieStorageConfigDefaultsValid(t *testing.T) {
	c := DefaultBookieStorageConfig()
	if err := c.Validate(); err != nil {
		t.Fatalf("defaults do not validate: %v", err)
	}
	if _, err := Bind(nil, &c); err != nil {
		t.Fatalf("Bind: %v", err)
	}
}

func TestBookieStorageConfigValidateNamesKeys(t *testing.T) {
	c := DefaultBookieStorageConfig()
	c.JournalDirectories = []string{"a", "b"}
	c.JournalMaxGroupWait = 2 * time.Second
	c.WriteCacheMaxSizeMB = 1
	err := c.Validate()
	if err == nil {
		t.Fatal("bad config validated")
	}
	for _, key := range []string{"journalDirectories", "journalMaxGroupWait", "dbStorage_writeCacheMaxSizeMb"} {
		if !strings.Contains(err.Error(), key) {
			t.Errorf("error %q does not name %s", err, key)
		}
	}
}
