package config

import (
	"strings"
	"testing"
)

// TestTransactionBatchedWriteKeys: Pulsar's defaults (off, 512 records, 4 MiB, 1 ms) and
// its lower bounds, checked by Validate with the key named.
func TestTransactionBatchedWriteKeys(t *testing.T) {
	c := DefaultTransactionConfig()
	if c.LogBatchedWriteEnabled || c.LogBatchedWriteMaxRecords != 512 || c.LogBatchedWriteMaxSize != 4<<20 || c.LogBatchedWriteMaxDelayInMillis != 1 ||
		c.PendingAckBatchedWriteEnabled || c.PendingAckBatchedWriteMaxRecords != 512 || c.PendingAckBatchedWriteMaxSize != 4<<20 || c.PendingAckBatchedWriteMaxDelayInMillis != 1 {
		t.Fatalf("defaults %+v", c)
	}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	c.LogBatchedWriteMaxRecords, c.PendingAckBatchedWriteMaxSize, c.LogBatchedWriteMaxDelayInMillis = 9, 1024, 0
	err := c.Validate()
	for _, key := range []string{"transactionLogBatchedWriteMaxRecords", "transactionPendingAckBatchedWriteMaxSize", "transactionLogBatchedWriteMaxDelayInMillis"} {
		if err == nil || !strings.Contains(err.Error(), key) {
			t.Errorf("error does not name %s: %v", key, err)
		}
	}
}
