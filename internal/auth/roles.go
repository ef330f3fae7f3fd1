package auth

import (
	"crypto/tls"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/magnetar-io/magnetar/internal/config"
)

// TLS configs of the roles' internal clients, from their config keys.

// BookieClientTLS is the ledger client's TLS towards bookies (Pulsar's bookkeeperTLS*
// keys); nil when the bookies are plaintext.
func BookieClientTLS(cfg config.BookieClientTLSConfig, log *slog.Logger) (*tls.Config, error) {
	if !cfg.Enabled() {
		return nil, nil
	}
	o := ClientTLSOptions{TrustCertsFile: cfg.TrustCertsFilePath,
		Refresh: time.Duration(cfg.CertFilesRefreshDurationSeconds) * time.Second, Logger: log}
	if cfg.ClientAuthentication {
		o.CertFile, o.KeyFile = cfg.CertificateFilePath, cfg.KeyFilePath
	}
	return NewClientTLS(o)
}

// MetadataClientTLS is a role's TLS towards etcd, from the file metadataStoreConfigPath
// names (Pulsar's etcd settings: useTls, tlsTrustCertsFilePath, tlsCertificateFilePath,
// tlsKeyFilePath; YAML "key: value" or properties "key=value" lines). nil: plaintext.
func MetadataClientTLS(cfg config.MetadataClientTLSConfig, log *slog.Logger) (*tls.Config, error) {
	if cfg.ConfigPath == "" {
		return nil, nil
	}
	b, err := readFileLimited(cfg.ConfigPath)
	if err != nil {
		return nil, fmt.Errorf("%w: metadataStoreConfigPath: %w", ErrBadConfig, err)
	}
	kv := map[string]string{}
	for n, line := range strings.Split(string(b), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || line[0] == '#' || line == "---" {
			continue
		}
		i := strings.IndexAny(line, ":=")
		if i <= 0 {
			return nil, fmt.Errorf("%w: metadataStoreConfigPath %s line %d: want key: value", ErrBadConfig, cfg.ConfigPath, n+1)
		}
		kv[strings.TrimSpace(line[:i])] = strings.Trim(strings.TrimSpace(line[i+1:]), `"'`)
	}
	if use, _ := strconv.ParseBool(kv["useTls"]); !use {
		return nil, nil
	}
	return NewClientTLS(ClientTLSOptions{TrustCertsFile: kv["tlsTrustCertsFilePath"], CertFile: kv["tlsCertificateFilePath"],
		KeyFile: kv["tlsKeyFilePath"], Refresh: 5 * time.Minute, Logger: log,
		// etcd members are dialled by the names in the metadata URL, so check them.
		VerifyHostname: true})
}

// WriteMetadataClientConfig writes a metadataStoreConfigPath file (dev-cluster, tests).
func WriteMetadataClientConfig(path, trust, cert, key string) error {
	body := fmt.Sprintf("useTls: true\ntlsTrustCertsFilePath: %s\ntlsCertificateFilePath: %s\ntlsKeyFilePath: %s\n", trust, cert, key)
	return os.WriteFile(path, []byte(body), 0o600)
}

// BrokerClientHTTP is the HTTP client a broker uses towards other brokers (the brokerClient*
// keys): their TLS trust, its certificate, and its credentials on every request (redirects
// included).
func BrokerClientHTTP(cfg config.ClientAuthConfig, log *slog.Logger) (*http.Client, error) {
	tc, a, err := BrokerClient(cfg, log)
	if err != nil {
		return nil, err
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.TLSClientConfig = tc
	return &http.Client{Transport: authTransport{a: a, next: tr}, Timeout: time.Minute}, nil
}

// BrokerClient is what a broker presents to other brokers, on HTTP and on the binary
// protocol alike (the brokerClient* keys): the TLS configuration (trust, and its certificate
// from brokerClientCertificateFilePath or the tls plugin's parameters) and its credentials.
func BrokerClient(cfg config.ClientAuthConfig, log *slog.Logger) (*tls.Config, *ClientAuth, error) {
	a, err := ParseClientAuth(cfg.AuthenticationPlugin, cfg.AuthenticationParameters)
	if err != nil {
		return nil, nil, err
	}
	cert, key := cfg.CertificateFilePath, cfg.KeyFilePath
	if cert == "" {
		cert, key = a.CertFile, a.KeyFile
	}
	tc, err := NewClientTLS(ClientTLSOptions{TrustCertsFile: cfg.TrustCertsFilePath, CertFile: cert, KeyFile: key,
		VerifyHostname: cfg.HostnameVerification, Refresh: 5 * time.Minute, Logger: log})
	if err != nil {
		return nil, nil, err
	}
	return tc, a, nil
}

// BrokerClientAuth is the broker's own credentials towards other brokers.
func BrokerClientAuth(cfg config.ClientAuthConfig) (*ClientAuth, error) {
	return ParseClientAuth(cfg.AuthenticationPlugin, cfg.AuthenticationParameters)
}

// authTransport adds a ClientAuth's credentials to every request.
type authTransport struct {
	a    *ClientAuth
	next http.RoundTripper
}

func (t authTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	if err := t.a.SetHTTP(r); err != nil {
		return nil, err
	}
	return t.next.RoundTrip(r)
}
