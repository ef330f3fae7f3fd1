package config

import (
	"strings"
	"testing"
)

func TestProxyConfigValidate(t *testing.T) {
	c := DefaultProxyConfig()
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "brokerServiceURL") {
		t.Fatalf("defaults without any way to find brokers: %v", err)
	}
	c.BrokerServiceURL = "pulsar://localhost:6650"
	if err := c.Validate(); err != nil {
		t.Fatalf("defaults + brokerServiceURL: %v", err)
	}
	c = DefaultProxyConfig()
	c.MetadataStoreURL = "etcd://127.0.0.1:2379"
	if err := c.Validate(); err != nil {
		t.Fatalf("defaults + metadataStoreUrl: %v", err)
	}
	bad := DefaultProxyConfig()
	bad.BrokerServiceURL = "http://h:1"
	bad.BrokerWebServiceURL = "pulsar://h"
	bad.MetadataStoreURL = "zk://h"
	bad.MaxConcurrentInboundConnections = 0
	bad.MaxFrameSizeBytes = 10
	bad.SpliceBufferBytes = 0
	bad.HTTPMaxRedirects = 99
	err := bad.Validate()
	for _, key := range []string{"brokerServiceURL", "brokerWebServiceURL", "metadataStoreUrl", "maxConcurrentInboundConnections",
		"proxyMaxFrameSizeBytes", "proxySpliceBufferBytes", "proxyHttpMaxRedirects"} {
		if err == nil || !strings.Contains(err.Error(), key+"=") {
			t.Errorf("Validate does not name %s: %v", key, err)
		}
	}
}
