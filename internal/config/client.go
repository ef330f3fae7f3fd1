package config

import "errors"

// ClientConfig is what the command-line tools (`magnetar admin`, `client`, `perf`) read from
// a Pulsar client.conf, the file pulsar-admin and pulsar-client read: where the broker is.
// Their flags (--admin-url, --url, --service-url) win over it.
type ClientConfig struct {
	WebServiceURL    string `key:"webServiceUrl" help:"admin REST URL of a broker"`
	BrokerServiceURL string `key:"brokerServiceUrl" help:"binary protocol URL of a broker"`
}

// DefaultClientConfig returns client.conf's defaults.
func DefaultClientConfig() ClientConfig {
	return ClientConfig{WebServiceURL: "http://localhost:8080/", BrokerServiceURL: "pulsar://localhost:6650/"}
}

// Validate checks the URLs are set.
func (c *ClientConfig) Validate() error {
	return errors.Join(NotEmpty("webServiceUrl", c.WebServiceURL), NotEmpty("brokerServiceUrl", c.BrokerServiceURL))
}
