package config

import (
	"strings"
	"testing"

	"github.com/spf13/pflag"
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

// TestTransactionBatchedWriteKeysBind: the keys are set by the environment as every broker
// key is (what tests/e2e runs `magnetar standalone` with to batch its logs).
func TestTransactionBatchedWriteKeysBind(t *testing.T) {
	c := DefaultBrokerConfig()
	b, err := Bind(pflag.NewFlagSet("broker", pflag.ContinueOnError), &c)
	if err != nil {
		t.Fatal(err)
	}
	if err := Load("", []string{"MAGNETAR_TRANSACTION_LOG_BATCHED_WRITE_ENABLED=true",
		"MAGNETAR_TRANSACTION_PENDING_ACK_BATCHED_WRITE_MAX_RECORDS=64"}, b); err != nil {
		t.Fatal(err)
	}
	if !c.Transaction.LogBatchedWriteEnabled || c.Transaction.PendingAckBatchedWriteMaxRecords != 64 {
		t.Fatalf("loaded %+v", c.Transaction)
	}
}
