package devcluster

import (
	"crypto/tls"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/magnetar-io/magnetar/internal/auth"
	"github.com/magnetar-io/magnetar/internal/config"
)

// clusterTLS is the security of `magnetar dev-cluster --tls`: a throwaway CA under
// <dir>/tls, a certificate per role (its common name is the role it authenticates as), a
// token secret, and the flags that put every hop on TLS with authentication:
//
//   - metadata members serve https:// to clients and peers and require client certificates;
//     every other role reaches them with metadataStoreConfigPath;
//   - bookies serve TLS only, to certificates of roles broker and bookie (the auditor);
//   - brokers serve pulsar+ssl:// and https:// only, authenticate clients by certificate or
//     token, authorize them, and use their certificate towards bookies and other brokers;
//   - the proxy serves TLS only, authenticates clients, and reaches brokers over TLS as role
//     proxy (a proxy role);
//   - superusers are admin (the user: admin.token, client.conf), broker and proxy.
//
// Nothing in it is meant to protect real data: the CA key sits next to the certificates.
type clusterTLS struct {
	dir        string
	ca         *auth.CA
	certs      map[string]auth.Issued
	secretFile string
	// AdminToken is a token of the superuser admin; ClientConf a client.conf using it.
	AdminToken, ClientConf string
	mdConf                 string
	client                 *tls.Config // the dev-cluster's own client (readiness checks)
}

// TLS roles and their certificates.
var tlsRoles = []string{"metadata", "bookie", "broker", "proxy", "admin", "metadata-client"}

func newClusterTLS(dir string, hosts []string) (*clusterTLS, error) {
	dir = filepath.Join(dir, "tls")
	if err := os.RemoveAll(dir); err != nil {
		return nil, err
	}
	ca, err := auth.NewCA(dir, "magnetar dev-cluster CA", 30*24*time.Hour)
	if err != nil {
		return nil, err
	}
	t := &clusterTLS{dir: dir, ca: ca, certs: map[string]auth.Issued{}}
	for _, r := range tlsRoles {
		is, err := ca.Issue(auth.IssueOptions{Name: r, Hosts: hosts, Validity: 30 * 24 * time.Hour})
		if err != nil {
			return nil, err
		}
		t.certs[r] = is
	}
	secret, err := auth.NewSecretKey("HS256")
	if err != nil {
		return nil, err
	}
	t.secretFile = filepath.Join(dir, "secret.key")
	if err := os.WriteFile(t.secretFile, secret, 0o600); err != nil {
		return nil, err
	}
	tok, err := auth.CreateToken(secret, "HS256", auth.TokenSpec{Subject: "admin"})
	if err != nil {
		return nil, err
	}
	t.AdminToken = filepath.Join(dir, "admin.token")
	if err := os.WriteFile(t.AdminToken, []byte(tok+"\n"), 0o600); err != nil {
		return nil, err
	}
	mc := t.certs["metadata-client"]
	t.mdConf = filepath.Join(dir, "metadata.yaml")
	if err := auth.WriteMetadataClientConfig(t.mdConf, ca.CertFile, mc.CertFile, mc.KeyFile); err != nil {
		return nil, err
	}
	if t.client, err = auth.NewClientTLS(auth.ClientTLSOptions{TrustCertsFile: ca.CertFile, CertFile: mc.CertFile, KeyFile: mc.KeyFile}); err != nil {
		return nil, err
	}
	return t, nil
}

// flag renders key=value as the flag the binding derives from the key.
func flag(key, value string) string { return "--" + config.FlagName(key) + "=" + value }

func (t *clusterTLS) metadataArgs() []string {
	c := t.certs["metadata"]
	return []string{"--cert-file", c.CertFile, "--key-file", c.KeyFile, "--trusted-ca-file", t.ca.CertFile, "--client-cert-auth",
		"--peer-cert-file", c.CertFile, "--peer-key-file", c.KeyFile, "--peer-trusted-ca-file", t.ca.CertFile, "--peer-client-cert-auth"}
}

// bookieClient are the ledger client's TLS flags with role's certificate.
func (t *clusterTLS) bookieClient(role string) []string {
	c := t.certs[role]
	return []string{flag("bookkeeperTLSTrustCertsFilePath", t.ca.CertFile), flag("bookkeeperTLSClientAuthentication", "true"),
		flag("bookkeeperTLSCertificateFilePath", c.CertFile), flag("bookkeeperTLSKeyFilePath", c.KeyFile)}
}

func (t *clusterTLS) bookieArgs() []string {
	c := t.certs["bookie"]
	return append([]string{flag("metadataStoreConfigPath", t.mdConf),
		flag("tlsProviderFactoryClass", "org.apache.bookkeeper.tls.TLSContextFactory"), flag("tlsKeyStoreType", "PEM"),
		flag("tlsKeyStore", c.KeyFile), flag("tlsCertificatePath", c.CertFile), flag("tlsTrustStore", t.ca.CertFile),
		flag("tlsClientAuthentication", "true"), flag("authorizedRoles", "broker,bookie")}, t.bookieClient("bookie")...)
}

// authn are the authentication flags shared by brokers and the proxy.
func (t *clusterTLS) authn() []string {
	return []string{flag("authenticationEnabled", "true"),
		flag("authenticationProviders", "org.apache.pulsar.broker.authentication.AuthenticationProviderTls,org.apache.pulsar.broker.authentication.AuthenticationProviderToken"),
		flag("tokenSecretKey", "file://"+t.secretFile)}
}

// server are the TLS listener flags with role's certificate.
func (t *clusterTLS) server(role string) []string {
	c := t.certs[role]
	return []string{flag("tlsCertificateFilePath", c.CertFile), flag("tlsKeyFilePath", c.KeyFile),
		flag("tlsTrustCertsFilePath", t.ca.CertFile), flag("tlsHostnameVerificationEnabled", "true")}
}

// clientOf are the brokerClient* flags of role: its certificate, the CA.
func (t *clusterTLS) clientOf(role string) []string {
	c := t.certs[role]
	return []string{flag("brokerClientTrustCertsFilePath", t.ca.CertFile),
		flag("brokerClientAuthenticationPlugin", "org.apache.pulsar.client.impl.auth.AuthenticationTls"),
		flag("brokerClientAuthenticationParameters", "tlsCertFile:"+c.CertFile+",tlsKeyFile:"+c.KeyFile)}
}

func (t *clusterTLS) brokerArgs(tlsPort, httpsPort string) []string {
	args := []string{flag("metadataStoreConfigPath", t.mdConf), "--port=-1", "--http-port=-1",
		"--port-tls=" + tlsPort, "--http-port-tls=" + httpsPort,
		flag("authorizationEnabled", "true"), flag("superUserRoles", "admin,broker,proxy"), flag("proxyRoles", "proxy"),
		flag("brokerClientTlsEnabled", "true")}
	args = append(args, t.authn()...)
	args = append(args, t.server("broker")...)
	args = append(args, t.clientOf("broker")...)
	return append(args, t.bookieClient("broker")...)
}

func (t *clusterTLS) proxyArgs(tlsPort, httpsPort string) []string {
	args := []string{flag("metadataStoreConfigPath", t.mdConf), "--port=-1", "--http-port=-1",
		"--port-tls=" + tlsPort, "--http-port-tls=" + httpsPort, flag("tlsEnabledWithBroker", "true")}
	args = append(args, t.authn()...)
	args = append(args, t.server("proxy")...)
	return append(args, t.clientOf("proxy")...)
}

// writeClientConf writes a client.conf for magnetar admin/client (--config) and the
// Pulsar tools: the proxy's TLS URLs, the admin token, the CA.
func (t *clusterTLS) writeClientConf(webURL, brokerURL string) error {
	t.ClientConf = filepath.Join(t.dir, "client.conf")
	body := strings.Join([]string{"webServiceUrl=" + webURL, "brokerServiceUrl=" + brokerURL,
		"authPlugin=org.apache.pulsar.client.impl.auth.AuthenticationToken", "authParams=file://" + t.AdminToken,
		"tlsTrustCertsFilePath=" + t.ca.CertFile, "tlsAllowInsecureConnection=false", "tlsEnableHostnameVerification=true", ""}, "\n")
	if err := os.WriteFile(t.ClientConf, []byte(body), 0o600); err != nil {
		return fmt.Errorf("client.conf: %w", err)
	}
	return nil
}

// CAFile is the CA certificate clients trust.
func (t *clusterTLS) CAFile() string { return t.ca.CertFile }

// Cert is the certificate issued to role (metadata, bookie, broker, proxy, admin,
// metadata-client).
func (t *clusterTLS) Cert(role string) (auth.Issued, bool) {
	c, ok := t.certs[role]
	return c, ok
}
