package config

import (
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

func TestBrokerConfigDefaultsAndBinding(t *testing.T) {
	c := DefaultBrokerConfig()
	if err := c.Validate(); err != nil {
		t.Fatalf("defaults do not validate: %v", err)
	}
	fs := pflag.NewFlagSet("broker", pflag.ContinueOnError)
	b, err := Bind(fs, &c)
	if err != nil {
		t.Fatal(err)
	}
	if err := fs.Parse([]string{"--port", "7650", "--max-message-size", "1048576", "--dispatcher-max-read-batch-size", "50"}); err != nil {
		t.Fatal(err)
	}
	if err := Load("", []string{"MAGNETAR_ALLOW_AUTO_TOPIC_CREATION_TYPE=partitioned"}, b); err != nil {
		t.Fatal(err)
	}
	if c.DispatcherMaxReadBatchSize != 50 || c.ManagedLedger.MaxReadBatchSize != 50 {
		t.Fatalf("shared key dispatcherMaxReadBatchSize set %d and %d", c.DispatcherMaxReadBatchSize, c.ManagedLedger.MaxReadBatchSize)
	}
	if c.ServicePort != 7650 || c.MaxMessageSize != 1<<20 || c.AllowAutoTopicCreationType != "partitioned" {
		t.Fatalf("loaded %+v", c)
	}
}

func TestBrokerConfigValidateNamesKeys(t *testing.T) {
	c := DefaultBrokerConfig()
	c.AllowAutoTopicCreationType = "sometimes"
	c.MaxMessageSize = 10
	c.DispatcherMaxReadBatchSize = 0
	err := c.Validate()
	if err == nil {
		t.Fatal("bad config validated")
	}
	for _, key := range []string{"allowAutoTopicCreationType", "maxMessageSize", "dispatcherMaxReadBatchSize"} {
		if !strings.Contains(err.Error(), key) {
			t.Errorf("error does not name %s: %v", key, err)
		}
	}
}
