package config

import "errors"

// ClientConfig is what the command-line tools (`magnetar admin`, `client`, `perf`) read from
// a Pulsar client.conf, the file pulsar-admin and pulsar-client read: where the broker is.
// Their flags (--admin-url, --url, --service-url) win over it.
type ClientConfig struct {
	WebServiceURL    string `key:"webServiceUrl" help:"admin REST URL of a broker"`
	BrokerServiceURL string `key:"brokerServiceUrl" help:"binary protocol URL of a broker"`

	// Authentication and TLS (internal/auth/client.go reads the plugin and parameters).
	AuthPlugin                    string `key:"authPlugin" help:"authentication plugin (AuthenticationToken, AuthenticationTls, AuthenticationBasic, AuthenticationOAuth2)"`
	AuthParams                    string `key:"authParams" help:"parameters of authPlugin"`
	TLSTrustCertsFilePath         string `key:"tlsTrustCertsFilePath" help:"PEM CA certificates the server's certificate must chain to"`
	TLSAllowInsecureConnection    bool   `key:"tlsAllowInsecureConnection" help:"accept any server certificate"`
	TLSEnableHostnameVerification bool   `key:"tlsEnableHostnameVerification" help:"check that the server's certificate names its host"`
	TLSCertificateFilePath        string `key:"tlsCertificateFilePath" help:"PEM client certificate for mutual TLS"`
	TLSKeyFilePath                string `key:"tlsKeyFilePath" help:"PEM key of tlsCertificateFilePath"`
}

// DefaultClientConfig returns client.conf's defaults.
func DefaultClientConfig() ClientConfig {
	return ClientConfig{WebServiceURL: "http://localhost:8080/", BrokerServiceURL: "pulsar://localhost:6650/"}
}

// Validate checks the URLs are set.
func (c *ClientConfig) Validate() error {
	return errors.Join(NotEmpty("webServiceUrl", c.WebServiceURL), NotEmpty("brokerServiceUrl", c.BrokerServiceURL))
}
