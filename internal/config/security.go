package config

import (
	"errors"
	"fmt"
	"strings"
	"time"
)

// Security keys. Every name is Pulsar's (broker.conf, proxy.conf) unless its comment says
// "ours"; internal/auth turns these structs into TLS configs, providers and the
// authorization service (see internal/auth/doc.go for what each key does at run time).

// TLSServerConfig is the TLS side of a listener that clients reach: the broker's 6651/8443,
// the proxy's, the metadata member's. The files are PEM. Certificates and the trust store are
// re-read from disk when they change, checked every TLSCertRefreshCheckDurationSec.
type TLSServerConfig struct {
	// TLSEnabled is Pulsar's deprecated switch; TLS listeners are enabled by their ports
	// (brokerServicePortTls, webServicePortTls). Accepted so Pulsar's conf files load.
	TLSEnabled                  bool     `key:"tlsEnabled" help:"deprecated: TLS is enabled by brokerServicePortTls/webServicePortTls"`
	CertificateFilePath         string   `key:"tlsCertificateFilePath" help:"PEM certificate chain of this server's TLS listeners"`
	KeyFilePath                 string   `key:"tlsKeyFilePath" help:"PEM private key of tlsCertificateFilePath"`
	TrustCertsFilePath          string   `key:"tlsTrustCertsFilePath" help:"PEM CA certificates that client certificates must chain to"`
	AllowInsecureConnection     bool     `key:"tlsAllowInsecureConnection" help:"accept client certificates that do not chain to tlsTrustCertsFilePath (they never authenticate)"`
	RequireTrustedClientCert    bool     `key:"tlsRequireTrustedClientCertOnConnect" help:"refuse TLS handshakes without a trusted client certificate"`
	Protocols                   []string `key:"tlsProtocols" help:"TLS versions accepted, e.g. TLSv1.3,TLSv1.2 (empty: TLSv1.2 and up)"`
	Ciphers                     []string `key:"tlsCiphers" help:"TLS 1.2 cipher suites accepted, IANA names (empty: Go's secure defaults)"`
	CertRefreshCheckDurationSec int      `key:"tlsCertRefreshCheckDurationSec" help:"seconds between checks of the certificate files for changes (0: never reload)"`
}

// DefaultTLSServerConfig returns Pulsar's defaults (no files: TLS listeners off).
func DefaultTLSServerConfig() TLSServerConfig {
	return TLSServerConfig{CertRefreshCheckDurationSec: 300}
}

// Configured says whether a certificate and key are set, so TLS listeners can be served.
func (c *TLSServerConfig) Configured() bool {
	return c.CertificateFilePath != "" && c.KeyFilePath != ""
}

// CertRefresh is CertRefreshCheckDurationSec as a duration.
func (c *TLSServerConfig) CertRefresh() time.Duration {
	return time.Duration(c.CertRefreshCheckDurationSec) * time.Second
}

// Validate checks the TLS settings. The files themselves are read (and their errors
// reported) when the listener is built, not here.
func (c *TLSServerConfig) Validate() error {
	errs := []error{AtLeast("tlsCertRefreshCheckDurationSec", c.CertRefreshCheckDurationSec, 0)}
	if (c.CertificateFilePath == "") != (c.KeyFilePath == "") {
		errs = append(errs, &FieldError{Key: "tlsKeyFilePath", Value: c.KeyFilePath,
			Reason: "tlsCertificateFilePath and tlsKeyFilePath must be set together"})
	}
	for _, p := range c.Protocols {
		if _, ok := TLSVersions[p]; !ok {
			errs = append(errs, &FieldError{Key: "tlsProtocols", Value: p, Reason: "must be TLSv1.2 or TLSv1.3"})
		}
	}
	if c.RequireTrustedClientCert && c.TrustCertsFilePath == "" {
		errs = append(errs, &FieldError{Key: "tlsTrustCertsFilePath", Value: `""`,
			Reason: "must be set when tlsRequireTrustedClientCertOnConnect is true"})
	}
	return errors.Join(errs...)
}

// TLSVersions maps the Java protocol names of tlsProtocols to crypto/tls versions. Older
// protocols are refused on purpose.
var TLSVersions = map[string]uint16{"TLSv1.2": 0x0303, "TLSv1.3": 0x0304}

// AuthenticationConfig is who a client is: the providers and their settings.
type AuthenticationConfig struct {
	Enabled bool `key:"authenticationEnabled" help:"authenticate clients on every binary connection and HTTP request"`
	// Providers are Pulsar's class names (org.apache.pulsar.broker.authentication.
	// AuthenticationProviderToken, ...Tls, ...Basic, ...AuthenticationProviderOpenID) or our
	// short names token, tls, basic, openid. A client picks one by auth_method_name.
	Providers []string `key:"authenticationProviders" help:"authentication providers (Pulsar class names or token, tls, basic, openid)"`
	// AnonymousUserRole is the role of a client that sends no credentials; empty refuses them.
	AnonymousUserRole string `key:"anonymousUserRole" help:"role given to clients without credentials (empty: refuse them)"`
	// RefreshCheckSeconds is how often the broker checks each connection's credentials; an
	// expired one is challenged (AUTH_CHALLENGE) and the connection closed if the answer does
	// not come or does not authenticate by the next check.
	RefreshCheckSeconds int `key:"authenticationRefreshCheckSeconds" help:"seconds between checks of each connection's credentials for expiry"`

	// Proxy: roles allowed to connect on behalf of others, and whether the broker checks the
	// original client's credentials too (not only the proxy's word for its role).
	ProxyRoles                   []string `key:"proxyRoles" help:"roles of proxies, allowed to act for the original principal they forward"`
	AuthenticateOriginalAuthData bool     `key:"authenticateOriginalAuthData" help:"authenticate the original client's credentials a proxy forwards"`

	Token  TokenAuthConfig
	Basic  BasicAuthConfig
	OpenID OpenIDAuthConfig
}

// TokenAuthConfig configures AuthenticationProviderToken (JWT).
type TokenAuthConfig struct {
	// SecretKey (HS256/384/512) or PublicKey (RS*, ES*, PS*): "data:;base64,...",
	// "file:///path", "env:VAR", or the key itself in base64. Exactly one may be set.
	SecretKey string `key:"tokenSecretKey" help:"HMAC secret for tokens: data:;base64,..., file:///path, env:NAME or base64"`
	PublicKey string `key:"tokenPublicKey" help:"public key for RS/ES/PS tokens: data:;base64,..., file:///path, env:NAME or base64 (DER or PEM)"`
	// PublicAlg is the only algorithm accepted with PublicKey (the key's family decides when
	// unset); tokens signed with anything else are refused, HS* in particular.
	PublicAlg               string `key:"tokenPublicAlg" help:"signature algorithm of tokens checked with tokenPublicKey (RS256, ES256, ...)"`
	AuthClaim               string `key:"tokenAuthClaim" help:"claim holding the role"`
	AudienceClaim           string `key:"tokenAudienceClaim" help:"claim holding the audience"`
	Audience                string `key:"tokenAudience" help:"audience this broker accepts (empty: not checked)"`
	AllowedClockSkewSeconds int    `key:"tokenAllowedClockSkewSeconds" help:"seconds of clock skew tolerated on exp and nbf"`
}

// BasicAuthConfig configures AuthenticationProviderBasic.
type BasicAuthConfig struct {
	// Conf is an htpasswd file: a path, "file:///path", "data:;base64,..." or base64 text.
	// Pulsar's system property pulsar.auth.basic.conf is honoured from PULSAR_EXTRA_OPTS.
	Conf string `key:"basicAuthConf" help:"htpasswd file of the basic provider: path, file:///path, data:;base64,... or base64"`
}

// OpenIDAuthConfig configures AuthenticationProviderOpenID: tokens signed by an issuer's
// keys, fetched from its JWKS (found through /.well-known/openid-configuration).
type OpenIDAuthConfig struct {
	AllowedTokenIssuers           []string `key:"openIDAllowedTokenIssuers" help:"issuers (iss) whose tokens are accepted"`
	AllowedAudiences              []string `key:"openIDAllowedAudiences" help:"audiences (aud) accepted; a token must name one"`
	RoleClaim                     string   `key:"openIDRoleClaim" help:"claim holding the role"`
	AcceptedTimeLeewaySeconds     int      `key:"openIDAcceptedTimeLeewaySeconds" help:"seconds of clock skew tolerated on exp, nbf and iat"`
	CacheSize                     int      `key:"openIDCacheSize" help:"issuers whose keys are cached"`
	CacheRefreshAfterWriteSeconds int      `key:"openIDCacheRefreshAfterWriteSeconds" help:"seconds after which an issuer's keys are fetched again"`
	CacheExpirationSeconds        int      `key:"openIDCacheExpirationSeconds" help:"seconds after which cached keys are dropped"`
	HTTPConnectionTimeoutMillis   int      `key:"openIDHttpConnectionTimeoutMillis" help:"timeout connecting to an issuer, ms"`
	HTTPReadTimeoutMillis         int      `key:"openIDHttpReadTimeoutMillis" help:"timeout reading an issuer's answer, ms"`
	TokenIssuerTrustCertsFilePath string   `key:"openIDTokenIssuerTrustCertsFilePath" help:"PEM CA certificates of the issuers' HTTPS (empty: the system's)"`
	RequireIssuersUseHTTPS        bool     `key:"openIDRequireIssuersUseHttps" help:"refuse issuers that are not https://"`
	FallbackDiscoveryMode         string   `key:"openIDFallbackDiscoveryMode" help:"only DISABLED is supported"`
}

// DefaultAuthenticationConfig returns Pulsar's defaults: authentication off.
func DefaultAuthenticationConfig() AuthenticationConfig {
	return AuthenticationConfig{
		RefreshCheckSeconds: 60,
		Token:               TokenAuthConfig{AuthClaim: "sub", AudienceClaim: "aud"},
		OpenID: OpenIDAuthConfig{
			RoleClaim: "sub", CacheSize: 5, CacheRefreshAfterWriteSeconds: 18 * 3600, CacheExpirationSeconds: 24 * 3600,
			HTTPConnectionTimeoutMillis: 10_000, HTTPReadTimeoutMillis: 10_000, RequireIssuersUseHTTPS: true,
			FallbackDiscoveryMode: "DISABLED",
		},
	}
}

// RefreshCheck is RefreshCheckSeconds as a duration.
func (c *AuthenticationConfig) RefreshCheck() time.Duration {
	return time.Duration(c.RefreshCheckSeconds) * time.Second
}

// Validate checks the authentication settings (provider names are checked by internal/auth,
// which knows them).
func (c *AuthenticationConfig) Validate() error {
	errs := []error{
		Between("authenticationRefreshCheckSeconds", c.RefreshCheckSeconds, 1, 86400),
		Between("tokenAllowedClockSkewSeconds", c.Token.AllowedClockSkewSeconds, 0, 86400),
		NotEmpty("tokenAuthClaim", c.Token.AuthClaim),
		NotEmpty("openIDRoleClaim", c.OpenID.RoleClaim),
		Between("openIDAcceptedTimeLeewaySeconds", c.OpenID.AcceptedTimeLeewaySeconds, 0, 86400),
		Between("openIDCacheSize", c.OpenID.CacheSize, 1, 10000),
		Between("openIDCacheRefreshAfterWriteSeconds", c.OpenID.CacheRefreshAfterWriteSeconds, 1, 30*86400),
		Between("openIDCacheExpirationSeconds", c.OpenID.CacheExpirationSeconds, 1, 30*86400),
		Between("openIDHttpConnectionTimeoutMillis", c.OpenID.HTTPConnectionTimeoutMillis, 1, 600_000),
		Between("openIDHttpReadTimeoutMillis", c.OpenID.HTTPReadTimeoutMillis, 1, 600_000),
		OneOf("openIDFallbackDiscoveryMode", c.OpenID.FallbackDiscoveryMode, "DISABLED"),
	}
	if c.Token.SecretKey != "" && c.Token.PublicKey != "" {
		errs = append(errs, &FieldError{Key: "tokenPublicKey", Value: "(set)", Reason: "tokenSecretKey and tokenPublicKey are exclusive (one provider checks one kind of key)"})
	}
	if c.Enabled && len(c.Providers) == 0 {
		errs = append(errs, &FieldError{Key: "authenticationProviders", Value: `""`, Reason: "must list at least one provider when authenticationEnabled is true"})
	}
	return errors.Join(errs...)
}

// AuthorizationConfig is what a role may do.
type AuthorizationConfig struct {
	Enabled bool `key:"authorizationEnabled" help:"check every operation against tenant, namespace, topic and subscription permissions"`
	// Provider is Pulsar's class name of the authorization provider; only the default
	// (org.apache.pulsar.broker.authorization.PulsarAuthorizationProvider) exists here.
	Provider               string   `key:"authorizationProvider" help:"authorization provider (only Pulsar's default)"`
	SuperUserRoles         []string `key:"superUserRoles" help:"roles allowed everything"`
	AllowWildcardsMatching bool     `key:"authorizationAllowWildcardsMatching" help:"let permission roles end or start with * to match role prefixes/suffixes"`
	// RecheckIntervalSeconds (ours) bounds how long a live producer or consumer keeps working
	// after its permission was revoked: every interval the broker rechecks each one and
	// closes those no longer allowed. Decisions are cached per producer/consumer meanwhile,
	// never taken per message.
	RecheckIntervalSeconds int `key:"authorizationRecheckIntervalSeconds" help:"seconds between permission rechecks of live producers and consumers (ours)"`
}

// DefaultAuthorizationProvider is Pulsar's default authorizationProvider class.
const DefaultAuthorizationProvider = "org.apache.pulsar.broker.authorization.PulsarAuthorizationProvider"

// DefaultAuthorizationConfig returns Pulsar's defaults: authorization off.
func DefaultAuthorizationConfig() AuthorizationConfig {
	return AuthorizationConfig{Provider: DefaultAuthorizationProvider, RecheckIntervalSeconds: 30}
}

// RecheckInterval is RecheckIntervalSeconds as a duration.
func (c *AuthorizationConfig) RecheckInterval() time.Duration {
	return time.Duration(c.RecheckIntervalSeconds) * time.Second
}

// Validate checks the authorization settings.
func (c *AuthorizationConfig) Validate() error {
	errs := []error{Between("authorizationRecheckIntervalSeconds", c.RecheckIntervalSeconds, 1, 86400)}
	if c.Provider != "" && c.Provider != DefaultAuthorizationProvider && c.Provider != "pulsar" {
		errs = append(errs, &FieldError{Key: "authorizationProvider", Value: c.Provider, Reason: "only " + DefaultAuthorizationProvider + " is available"})
	}
	return errors.Join(errs...)
}

// ClientAuthConfig is how one of our processes authenticates to another as a client: the
// broker to other brokers (brokerClient* keys), the proxy to brokers. The plugin and its
// parameters are pulsar-admin's (--auth-plugin/--auth-params, see internal/auth/client.go).
type ClientAuthConfig struct {
	TLSEnabled               bool   `key:"brokerClientTlsEnabled" help:"use TLS towards other brokers"`
	TrustCertsFilePath       string `key:"brokerClientTrustCertsFilePath" help:"PEM CA certificates that brokers' certificates must chain to"`
	CertificateFilePath      string `key:"brokerClientCertificateFilePath" help:"PEM client certificate presented to brokers"`
	KeyFilePath              string `key:"brokerClientKeyFilePath" help:"PEM key of brokerClientCertificateFilePath"`
	AuthenticationPlugin     string `key:"brokerClientAuthenticationPlugin" help:"client authentication plugin towards brokers (Pulsar class name or token, tls, basic)"`
	AuthenticationParameters string `key:"brokerClientAuthenticationParameters" help:"parameters of brokerClientAuthenticationPlugin"`
	// HostnameVerification checks the broker's certificate names the host dialed.
	HostnameVerification bool `key:"tlsHostnameVerificationEnabled" help:"check that a peer's certificate names the host dialed"`
}

// Validate checks the client settings.
func (c *ClientAuthConfig) Validate() error {
	if (c.CertificateFilePath == "") != (c.KeyFilePath == "") {
		return &FieldError{Key: "brokerClientKeyFilePath", Value: c.KeyFilePath, Reason: "brokerClientCertificateFilePath and brokerClientKeyFilePath must be set together"}
	}
	return nil
}

// SecurityConfig is a broker's security: TLS listeners, authentication, authorization and
// its credentials towards other brokers. Standalone and `magnetar broker` share it.
type SecurityConfig struct {
	// TLS ports, beside (or, with brokerServicePort/webServicePort set to -1... see
	// DisablePlaintext) instead of the plaintext ones. -1: no TLS listener; 0: a free port.
	ServicePortTLS    int `key:"brokerServicePortTls" flag:"port-tls" help:"binary protocol TLS (pulsar+ssl://) port (-1: none, 0: any free port)"`
	WebServicePortTLS int `key:"webServicePortTls" flag:"http-port-tls" help:"HTTPS port (-1: none, 0: any free port)"`

	TLS    TLSServerConfig
	Authn  AuthenticationConfig
	Authz  AuthorizationConfig
	Client ClientAuthConfig

	// AuthenticateMetricsEndpoint makes /metrics need authentication (Pulsar's key; off by
	// default, as scrapers and the Go client's CI read it anonymously).
	AuthenticateMetricsEndpoint bool `key:"authenticateMetricsEndpoint" help:"require authentication on /metrics"`
}

// DefaultSecurityConfig returns Pulsar's defaults: no TLS listener, no authentication, no
// authorization.
func DefaultSecurityConfig() SecurityConfig {
	return SecurityConfig{
		ServicePortTLS: -1, WebServicePortTLS: -1,
		TLS: DefaultTLSServerConfig(), Authn: DefaultAuthenticationConfig(), Authz: DefaultAuthorizationConfig(),
	}
}

// Validate checks every security setting.
func (c *SecurityConfig) Validate() error {
	errs := []error{
		Between("brokerServicePortTls", c.ServicePortTLS, -1, 65535),
		Between("webServicePortTls", c.WebServicePortTLS, -1, 65535),
		c.TLS.Validate(), c.Authn.Validate(), c.Authz.Validate(), c.Client.Validate(),
	}
	if (c.ServicePortTLS >= 0 || c.WebServicePortTLS >= 0) && !c.TLS.Configured() {
		errs = append(errs, &FieldError{Key: "tlsCertificateFilePath", Value: `""`,
			Reason: "must be set (with tlsKeyFilePath) when brokerServicePortTls or webServicePortTls is"})
	}
	if c.Authz.Enabled && !c.Authn.Enabled {
		errs = append(errs, &FieldError{Key: "authorizationEnabled", Value: true,
			Reason: "needs authenticationEnabled=true (without authentication every client is anonymous)"})
	}
	return errors.Join(errs...)
}

// BookieTLSConfig is the bookie's TLS listener and who may use it (BookKeeper's
// bk_server.conf names). Keys and certificates are PEM files (tlsKeyStoreType=PEM).
type BookieTLSConfig struct {
	// ProviderFactoryClass enables TLS when set (BookKeeper's
	// org.apache.bookkeeper.tls.TLSContextFactory, or "tls").
	ProviderFactoryClass string `key:"tlsProviderFactoryClass" help:"set (org.apache.bookkeeper.tls.TLSContextFactory) to serve TLS only"`
	KeyStoreType         string `key:"tlsKeyStoreType" help:"key store type: PEM"`
	KeyStore             string `key:"tlsKeyStore" help:"PEM private key of the bookie"`
	CertificatePath      string `key:"tlsCertificatePath" help:"PEM certificate chain of the bookie"`
	TrustStoreType       string `key:"tlsTrustStoreType" help:"trust store type: PEM"`
	TrustStore           string `key:"tlsTrustStore" help:"PEM CA certificates that clients' certificates must chain to"`
	// ClientAuthentication requires every client to present a certificate from TrustStore:
	// that is how a bookie accepts adds, reads and deletes from brokers only.
	ClientAuthentication bool `key:"tlsClientAuthentication" help:"require a trusted client certificate on every connection"`
	// AuthorizedRoles, when set, further limits clients to certificates with one of these
	// common names (BookKeeper's BookieAuthZFactory).
	AuthorizedRoles                 []string `key:"authorizedRoles" help:"client certificate common names allowed (empty: any trusted certificate)"`
	CertFilesRefreshDurationSeconds int      `key:"tlsCertFilesRefreshDurationSeconds" help:"seconds between checks of the certificate files for changes (0: never)"`
}

// Enabled says whether the bookie serves TLS.
func (c *BookieTLSConfig) Enabled() bool { return c.ProviderFactoryClass != "" }

// Validate checks the bookie TLS settings.
func (c *BookieTLSConfig) Validate() error {
	if !c.Enabled() {
		return nil
	}
	errs := []error{
		NotEmpty("tlsKeyStore", c.KeyStore), NotEmpty("tlsCertificatePath", c.CertificatePath),
		AtLeast("tlsCertFilesRefreshDurationSeconds", c.CertFilesRefreshDurationSeconds, 0),
	}
	errs = append(errs, pemOnly("tlsKeyStoreType", c.KeyStoreType), pemOnly("tlsTrustStoreType", c.TrustStoreType))
	if c.ClientAuthentication && c.TrustStore == "" {
		errs = append(errs, &FieldError{Key: "tlsTrustStore", Value: `""`, Reason: "must be set when tlsClientAuthentication is true"})
	}
	return errors.Join(errs...)
}

// BookieClientTLSConfig is the ledger client's side of bookie TLS (Pulsar's broker.conf
// bookkeeperTLS* keys). TLS is used when a trust store is set.
type BookieClientTLSConfig struct {
	ClientAuthentication            bool   `key:"bookkeeperTLSClientAuthentication" help:"present a client certificate to bookies"`
	KeyFileType                     string `key:"bookkeeperTLSKeyFileType" help:"key file type: PEM"`
	TrustCertTypes                  string `key:"bookkeeperTLSTrustCertTypes" help:"trust file type: PEM"`
	KeyFilePath                     string `key:"bookkeeperTLSKeyFilePath" help:"PEM key of the client certificate presented to bookies"`
	CertificateFilePath             string `key:"bookkeeperTLSCertificateFilePath" help:"PEM client certificate presented to bookies"`
	TrustCertsFilePath              string `key:"bookkeeperTLSTrustCertsFilePath" help:"PEM CA certificates of the bookies; set to talk TLS to bookies"`
	CertFilesRefreshDurationSeconds int    `key:"bookkeeperTLSCertFilesRefreshDurationSeconds" help:"seconds between checks of the certificate files for changes (0: never)"`
}

// Enabled says whether the client dials bookies over TLS.
func (c *BookieClientTLSConfig) Enabled() bool { return c.TrustCertsFilePath != "" }

// Validate checks the bookie client TLS settings.
func (c *BookieClientTLSConfig) Validate() error {
	errs := []error{pemOnly("bookkeeperTLSKeyFileType", c.KeyFileType), pemOnly("bookkeeperTLSTrustCertTypes", c.TrustCertTypes)}
	if c.ClientAuthentication && (c.KeyFilePath == "" || c.CertificateFilePath == "") {
		errs = append(errs, &FieldError{Key: "bookkeeperTLSCertificateFilePath", Value: c.CertificateFilePath,
			Reason: "bookkeeperTLSCertificateFilePath and bookkeeperTLSKeyFilePath must be set when bookkeeperTLSClientAuthentication is true"})
	}
	if c.ClientAuthentication && !c.Enabled() {
		errs = append(errs, &FieldError{Key: "bookkeeperTLSTrustCertsFilePath", Value: `""`, Reason: "must be set when bookkeeperTLSClientAuthentication is true"})
	}
	errs = append(errs, AtLeast("bookkeeperTLSCertFilesRefreshDurationSeconds", c.CertFilesRefreshDurationSeconds, 0))
	return errors.Join(errs...)
}

// MetadataClientTLSConfig is how a role reaches etcd over TLS with a client certificate:
// Pulsar's metadataStoreConfigPath names a YAML (or properties) file with useTls,
// tlsTrustCertsFilePath, tlsCertificateFilePath and tlsKeyFilePath (internal/auth reads it).
type MetadataClientTLSConfig struct {
	ConfigPath string `key:"metadataStoreConfigPath" help:"file with the metadata store client's TLS settings (useTls, tlsTrustCertsFilePath, tlsCertificateFilePath, tlsKeyFilePath)"`
}

// MetadataServerTLSConfig is `magnetar metadata`'s TLS towards clients and peers, etcd's flag
// names with our "metadata" prefix. With a client CA set, clients need a certificate from it:
// that is etcd's credential once security is on.
type MetadataServerTLSConfig struct {
	CertFile           string `key:"metadataCertFile" flag:"cert-file" help:"PEM certificate served to clients (https:// client URLs)"`
	KeyFile            string `key:"metadataKeyFile" flag:"key-file" help:"PEM key of --cert-file"`
	TrustedCAFile      string `key:"metadataTrustedCaFile" flag:"trusted-ca-file" help:"PEM CA certificates of client certificates"`
	ClientCertAuth     bool   `key:"metadataClientCertAuth" flag:"client-cert-auth" help:"require a trusted client certificate from every client"`
	PeerCertFile       string `key:"metadataPeerCertFile" flag:"peer-cert-file" help:"PEM certificate for peer traffic (https:// peer URLs)"`
	PeerKeyFile        string `key:"metadataPeerKeyFile" flag:"peer-key-file" help:"PEM key of --peer-cert-file"`
	PeerTrustedCAFile  string `key:"metadataPeerTrustedCaFile" flag:"peer-trusted-ca-file" help:"PEM CA certificates of peer certificates"`
	PeerClientCertAuth bool   `key:"metadataPeerClientCertAuth" flag:"peer-client-cert-auth" help:"require a trusted certificate from every peer"`
}

// Validate checks the metadata member's TLS settings.
func (c *MetadataServerTLSConfig) Validate() error {
	var errs []error
	pair := func(certKey, cert, keyKey, key string) {
		if (cert == "") != (key == "") {
			errs = append(errs, &FieldError{Key: keyKey, Value: key, Reason: fmt.Sprintf("%s and %s must be set together", certKey, keyKey)})
		}
	}
	pair("metadataCertFile", c.CertFile, "metadataKeyFile", c.KeyFile)
	pair("metadataPeerCertFile", c.PeerCertFile, "metadataPeerKeyFile", c.PeerKeyFile)
	if c.ClientCertAuth && c.TrustedCAFile == "" {
		errs = append(errs, &FieldError{Key: "metadataTrustedCaFile", Value: `""`, Reason: "must be set when metadataClientCertAuth is true"})
	}
	if c.PeerClientCertAuth && c.PeerTrustedCAFile == "" {
		errs = append(errs, &FieldError{Key: "metadataPeerTrustedCaFile", Value: `""`, Reason: "must be set when metadataPeerClientCertAuth is true"})
	}
	return errors.Join(errs...)
}

// pemOnly checks a key or trust store type: only PEM files are read here (no JKS, PKCS12).
func pemOnly(key, v string) error {
	if v != "" && !strings.EqualFold(v, "PEM") {
		return &FieldError{Key: key, Value: v, Reason: "only PEM is supported"}
	}
	return nil
}
