package standalone

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

// internalTLS protects a standalone's internal listeners once authentication is on: the
// embedded etcd member (when standaloneMetadataStore=etcd) and the bookie's socket listen on
// the loopback interface, where any local process could otherwise write metadata or
// ledgers behind the broker's back. Each start makes a throwaway CA under the data
// directory; the member and the bookie require client certificates of it, which only this
// process holds. The broker reaches its own bookie in process, so this costs it nothing.
type internalTLS struct {
	ca             *auth.CA
	server, client auth.Issued
	clientTLS      *tls.Config
}

// internalRole is the common name of the process's own client certificate.
const internalRole = "standalone"

func newInternalTLS(dataDir string) (*internalTLS, error) {
	dir := filepath.Join(dataDir, "internal-tls")
	if err := os.RemoveAll(dir); err != nil {
		return nil, err
	}
	ca, err := auth.NewCA(dir, "magnetar standalone internal CA", 10*365*24*time.Hour)
	if err != nil {
		return nil, fmt.Errorf("standalone: internal CA: %w", err)
	}
	t := &internalTLS{ca: ca}
	if t.server, err = ca.Issue(auth.IssueOptions{Name: "server", Hosts: []string{"127.0.0.1", "::1", "localhost"}, Validity: 10 * 365 * 24 * time.Hour}); err != nil {
		return nil, err
	}
	if t.client, err = ca.Issue(auth.IssueOptions{Name: "client", CommonName: internalRole, Validity: 10 * 365 * 24 * time.Hour}); err != nil {
		return nil, err
	}
	if t.clientTLS, err = auth.NewClientTLS(auth.ClientTLSOptions{TrustCertsFile: ca.CertFile, CertFile: t.client.CertFile, KeyFile: t.client.KeyFile}); err != nil {
		return nil, err
	}
	return t, nil
}

// metadata makes the embedded member serve https:// with client-certificate auth.
func (t *internalTLS) metadata(c *config.MetadataConfig) {
	for _, list := range []*[]string{&c.ListenClientURLs, &c.ListenPeerURLs} {
		for i, u := range *list {
			(*list)[i] = "https://" + strings.TrimPrefix(u, "http://")
		}
	}
	c.TLS = config.MetadataServerTLSConfig{CertFile: t.server.CertFile, KeyFile: t.server.KeyFile, TrustedCAFile: t.ca.CertFile, ClientCertAuth: true,
		PeerCertFile: t.server.CertFile, PeerKeyFile: t.server.KeyFile, PeerTrustedCAFile: t.ca.CertFile, PeerClientCertAuth: true}
}

// bookie makes the bookie's socket TLS-only for this process's certificate.
func (t *internalTLS) bookie(c *config.BookieConfig) {
	c.TLS = config.BookieTLSConfig{ProviderFactoryClass: "tls", KeyStoreType: "PEM", KeyStore: t.server.KeyFile,
		CertificatePath: t.server.CertFile, TrustStore: t.ca.CertFile, ClientAuthentication: true, AuthorizedRoles: []string{internalRole}}
}
