package config

import (
	"errors"
	"net/url"
	"strings"
	"time"
)

// ProxyConfig is `magnetar proxy`: a stateless gateway in front of the brokers. Key names are
// Pulsar's proxy.conf keys where one exists; the rest are ours and say so. None reload.
type ProxyConfig struct {
	// ShutdownTimeoutMs bounds a shutdown after SIGTERM (as brokerShutdownTimeoutMs does for
	// a broker): the process exits by then whatever is unreachable.
	ShutdownTimeoutMs int64 `key:"proxyShutdownTimeoutMs" help:"longest clean shutdown after SIGTERM, in milliseconds; the process exits by then"`
	// MetadataStoreURL is where brokers register (etcd://h:p,... or memory://); the proxy
	// watches their registrations to learn where to send lookups and which addresses a client
	// may ask to be connected to. Empty: only the configured broker URLs are used.
	MetadataStoreURL string `key:"metadataStoreUrl" flag:"metadata-url" help:"metadata store URL (etcd://host:2379,...) to discover brokers; empty = use brokerServiceURL only"`
	// BrokerRegistrationPrefix is the metadata prefix under which brokers register (our key;
	// Pulsar's layout: one key per broker holding JSON with pulsarServiceUrl/webServiceUrl).
	BrokerRegistrationPrefix string `key:"proxyBrokerRegistrationPrefix" help:"metadata prefix of broker registrations"`
	// BrokerServiceURL and BrokerWebServiceURL name a broker (or a load balancer in front of
	// brokers) used when no broker is registered, and always trusted as a target.
	BrokerServiceURL    string `key:"brokerServiceURL" help:"pulsar://host:port of a broker used for lookups when none is registered"`
	BrokerWebServiceURL string `key:"brokerWebServiceURL" help:"http://host:port of a broker's admin REST used when none is registered"`

	// BindAddress, ServicePort and WebServicePort are the proxy's listeners; port 0 picks a
	// free port (tests).
	BindAddress    string `key:"bindAddress" help:"host the proxy's listeners bind to"`
	ServicePort    int    `key:"servicePort" flag:"port" help:"binary protocol (pulsar://) port"`
	WebServicePort int    `key:"webServicePort" flag:"http-port" help:"HTTP port (admin REST forwarding, metrics)"`

	// MaxConcurrentInboundConnections bounds client connections; further ones are closed on
	// accept. MaxConcurrentLookupRequests bounds lookups (and other requests the proxy
	// answers itself) in flight towards brokers, for all clients together.
	MaxConcurrentInboundConnections int `key:"maxConcurrentInboundConnections" help:"most client connections at once"`
	MaxConcurrentLookupRequests     int `key:"maxConcurrentLookupRequests" help:"most lookups in flight towards brokers at once"`
	// MaxLookupRequestsPerConnection bounds the requests one client connection has in
	// flight, so a single client cannot take every lookup slot (ours).
	MaxLookupRequestsPerConnection int `key:"proxyMaxLookupRequestsPerConnection" help:"most lookups in flight for one client connection"`

	// MaxFrameSizeBytes bounds frames the proxy decodes itself, that is before a connection
	// is spliced to a broker (CONNECT, lookups); after splicing bytes are not decoded (ours).
	MaxFrameSizeBytes int `key:"proxyMaxFrameSizeBytes" help:"largest frame decoded before a connection is spliced to a broker, in bytes"`
	// SpliceBufferBytes is the size of each of the two copy buffers of a spliced connection
	// (ours); memory per spliced client is about twice this.
	SpliceBufferBytes int `key:"proxySpliceBufferBytes" help:"copy buffer per direction of a spliced connection, in bytes"`

	// BrokerProxyConnectTimeoutMs bounds dialing a broker and its CONNECT handshake;
	// BrokerProxyReadTimeoutMs bounds waiting for a broker's answer to a lookup.
	BrokerProxyConnectTimeoutMs int `key:"brokerProxyConnectTimeoutMs" help:"timeout to connect and handshake with a broker, in ms"`
	BrokerProxyReadTimeoutMs    int `key:"brokerProxyReadTimeoutMs" help:"timeout for a broker's answer to a forwarded request, in ms"`
	// KeepAliveIntervalSeconds is how often the proxy pings an idle unspliced client
	// connection; one silent for twice as long is closed.
	KeepAliveIntervalSeconds int `key:"keepAliveIntervalSeconds" help:"seconds between pings on idle client connections"`

	// HTTPMaxRequestSize bounds a forwarded HTTP request body; the proxy buffers bodies so it
	// can replay them when a broker redirects (307) to the owner.
	HTTPMaxRequestSize int64 `key:"httpMaxRequestSize" help:"largest HTTP request body forwarded, in bytes"`
	// HTTPMaxRedirects bounds how many 307/308 redirects between brokers the proxy follows
	// for one HTTP request (ours).
	HTTPMaxRedirects int `key:"proxyHttpMaxRedirects" help:"most broker redirects followed for one HTTP request"`

	// Security (proxy.conf keys): TLS listeners beside or instead of the plaintext ones
	// (servicePort/webServicePort -1), client authentication, and how the proxy reaches and
	// authenticates to brokers.
	ServicePortTLS    int `key:"servicePortTls" flag:"port-tls" help:"binary protocol TLS (pulsar+ssl://) port (-1: none, 0: any free port)"`
	WebServicePortTLS int `key:"webServicePortTls" flag:"http-port-tls" help:"HTTPS port (-1: none, 0: any free port)"`
	TLS               TLSServerConfig
	Authn             AuthenticationConfig
	// ForwardAuthorizationCredentials sends the client's own credentials to brokers beside
	// its role (original_auth_data), for brokers with authenticateOriginalAuthData.
	ForwardAuthorizationCredentials bool `key:"forwardAuthorizationCredentials" help:"forward the client's credentials to brokers (original_auth_data)"`
	// TLSEnabledWithBroker dials brokers' TLS listeners (their pulsarServiceUrlTls,
	// brokerServiceURLTLS), verified with brokerClientTrustCertsFilePath.
	TLSEnabledWithBroker   bool   `key:"tlsEnabledWithBroker" help:"connect to brokers over TLS"`
	BrokerServiceURLTLS    string `key:"brokerServiceURLTLS" help:"pulsar+ssl://host:port of a broker, used with tlsEnabledWithBroker"`
	BrokerWebServiceURLTLS string `key:"brokerWebServiceURLTLS" help:"https://host:port of a broker's admin REST, used with tlsEnabledWithBroker"`
	// Client is the proxy's own credentials and trust towards brokers (brokerClient* keys).
	Client ClientAuthConfig
	// AuthenticateMetricsEndpoint makes /metrics need authentication.
	AuthenticateMetricsEndpoint bool `key:"authenticateMetricsEndpoint" help:"require authentication on /metrics"`
	// MetadataTLS is how the proxy reaches etcd over TLS (metadataStoreConfigPath).
	MetadataTLS MetadataClientTLSConfig
}

// DefaultProxyConfig returns Pulsar's proxy.conf defaults where they exist.
func DefaultProxyConfig() ProxyConfig {
	return ProxyConfig{
		ShutdownTimeoutMs:               30_000,
		BrokerRegistrationPrefix:        "/loadbalance/brokers/",
		BindAddress:                     "0.0.0.0",
		ServicePort:                     6650,
		WebServicePort:                  8080,
		MaxConcurrentInboundConnections: 10000,
		MaxConcurrentLookupRequests:     50000,
		MaxLookupRequestsPerConnection:  1000,
		MaxFrameSizeBytes:               1 << 20,
		SpliceBufferBytes:               32 << 10,
		BrokerProxyConnectTimeoutMs:     10000,
		BrokerProxyReadTimeoutMs:        75000,
		KeepAliveIntervalSeconds:        30,
		HTTPMaxRequestSize:              5 << 20,
		HTTPMaxRedirects:                5,
		ServicePortTLS:                  -1,
		WebServicePortTLS:               -1,
		TLS:                             DefaultTLSServerConfig(),
		Authn:                           DefaultAuthenticationConfig(),
	}
}

// ConnectTimeout is BrokerProxyConnectTimeoutMs as a duration.
func (c *ProxyConfig) ConnectTimeout() time.Duration {
	return time.Duration(c.BrokerProxyConnectTimeoutMs) * time.Millisecond
}

// ReadTimeout is BrokerProxyReadTimeoutMs as a duration.
func (c *ProxyConfig) ReadTimeout() time.Duration {
	return time.Duration(c.BrokerProxyReadTimeoutMs) * time.Millisecond
}

// KeepAliveInterval is KeepAliveIntervalSeconds as a duration.
func (c *ProxyConfig) KeepAliveInterval() time.Duration {
	return time.Duration(c.KeepAliveIntervalSeconds) * time.Second
}

// Validate checks the proxy settings; every bad field is reported.
func (c *ProxyConfig) Validate() error {
	errs := []error{
		Between("proxyShutdownTimeoutMs", c.ShutdownTimeoutMs, 100, 3_600_000),
		NotEmpty("bindAddress", c.BindAddress),
		Between("servicePort", c.ServicePort, -1, 65535),
		Between("webServicePort", c.WebServicePort, -1, 65535),
		Between("servicePortTls", c.ServicePortTLS, -1, 65535),
		Between("webServicePortTls", c.WebServicePortTLS, -1, 65535),
		c.TLS.Validate(), c.Authn.Validate(), c.Client.Validate(),
		checkServiceURL("brokerServiceURLTLS", c.BrokerServiceURLTLS, "pulsar+ssl"),
		checkServiceURL("brokerWebServiceURLTLS", c.BrokerWebServiceURLTLS, "https"),
		Between("maxConcurrentInboundConnections", c.MaxConcurrentInboundConnections, 1, 1000000),
		Between("maxConcurrentLookupRequests", c.MaxConcurrentLookupRequests, 1, 1000000),
		Between("proxyMaxLookupRequestsPerConnection", c.MaxLookupRequestsPerConnection, 1, 1000000),
		Between("proxyMaxFrameSizeBytes", c.MaxFrameSizeBytes, 4<<10, 64<<20),
		Between("proxySpliceBufferBytes", c.SpliceBufferBytes, 1<<10, 16<<20),
		Between("brokerProxyConnectTimeoutMs", c.BrokerProxyConnectTimeoutMs, 100, 600000),
		Between("brokerProxyReadTimeoutMs", c.BrokerProxyReadTimeoutMs, 100, 600000),
		Between("keepAliveIntervalSeconds", c.KeepAliveIntervalSeconds, 1, 3600),
		Between("httpMaxRequestSize", c.HTTPMaxRequestSize, 1<<10, 1<<30),
		Between("proxyHttpMaxRedirects", c.HTTPMaxRedirects, 0, 20),
		checkServiceURL("brokerServiceURL", c.BrokerServiceURL, "pulsar"),
		checkServiceURL("brokerWebServiceURL", c.BrokerWebServiceURL, "http"),
	}
	if u := c.MetadataStoreURL; u != "" && !strings.HasPrefix(u, "etcd://") && !strings.HasPrefix(u, "memory://") {
		errs = append(errs, &FieldError{Key: "metadataStoreUrl", Value: u, Reason: "must start with etcd:// or memory://"})
	}
	if (c.ServicePortTLS >= 0 || c.WebServicePortTLS >= 0) && !c.TLS.Configured() {
		errs = append(errs, &FieldError{Key: "tlsCertificateFilePath", Value: `""`, Reason: "must be set (with tlsKeyFilePath) when servicePortTls or webServicePortTls is"})
	}
	if c.ServicePort < 0 && c.ServicePortTLS < 0 {
		errs = append(errs, &FieldError{Key: "servicePort", Value: c.ServicePort, Reason: "servicePort and servicePortTls are both off"})
	}
	if c.MetadataStoreURL == "" && c.BrokerServiceURL == "" && c.BrokerServiceURLTLS == "" {
		errs = append(errs, &FieldError{Key: "brokerServiceURL", Value: `""`, Reason: "must be set when metadataStoreUrl is not (the proxy needs a way to find brokers)"})
	}
	if c.MetadataStoreURL != "" {
		errs = append(errs, NotEmpty("proxyBrokerRegistrationPrefix", c.BrokerRegistrationPrefix))
	}
	return errors.Join(errs...)
}

// checkServiceURL checks an optional scheme://host:port URL.
func checkServiceURL(key, v, scheme string) error {
	if v == "" {
		return nil
	}
	u, err := url.Parse(v)
	if err != nil || u.Scheme != scheme || u.Host == "" || u.Port() == "" {
		return &FieldError{Key: key, Value: v, Reason: "must be " + scheme + "://host:port"}
	}
	return nil
}
