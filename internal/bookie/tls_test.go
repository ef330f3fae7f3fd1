package bookie

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/magnetar-io/magnetar/internal/auth"
	"github.com/magnetar-io/magnetar/internal/bookie/storage"
	"github.com/magnetar-io/magnetar/internal/bookieproto"
	"github.com/magnetar-io/magnetar/internal/config"
)

// TestBookieTLS: a TLS bookie with client authentication serves brokers holding a
// certificate of its CA (and, with authorizedRoles, of an allowed role) and nobody else.
func TestBookieTLS(t *testing.T) {
	dir := t.TempDir()
	ca, err := auth.NewCA(dir+"/ca", "bookie CA", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	other, err := auth.NewCA(dir+"/other", "other CA", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	issue := func(c *auth.CA, name string) auth.Issued {
		t.Helper()
		is, err := c.Issue(auth.IssueOptions{Name: name, Hosts: []string{"127.0.0.1"}})
		if err != nil {
			t.Fatal(err)
		}
		return is
	}
	srv, broker, intruder, stranger := issue(ca, "bookie"), issue(ca, "broker"), issue(ca, "intruder"), issue(other, "broker")
	f := startBookie(t, storage.NewMemory(), func(c *config.BookieConfig) {
		c.TLS = config.BookieTLSConfig{ProviderFactoryClass: "org.apache.bookkeeper.tls.TLSContextFactory",
			KeyStoreType: "PEM", KeyStore: srv.KeyFile, CertificatePath: srv.CertFile, TrustStore: ca.CertFile,
			ClientAuthentication: true, AuthorizedRoles: []string{"broker"}}
	})
	client := func(cert *auth.Issued, trust string) bookieproto.Client {
		t.Helper()
		cc := config.BookieClientTLSConfig{TrustCertsFilePath: trust}
		if cert != nil {
			cc.ClientAuthentication, cc.CertificateFilePath, cc.KeyFilePath = true, cert.CertFile, cert.KeyFile
		}
		tc, err := auth.BookieClientTLS(cc, nil)
		if err != nil {
			t.Fatal(err)
		}
		c := bookieproto.NewClient(bookieproto.ClientOptions{TLS: tc, RequestTimeout: 30 * time.Second})
		t.Cleanup(func() { _ = c.Close() })
		return c
	}
	add := func(c bookieproto.Client, entry int64) error {
		ch := make(chan error, 1)
		c.AddEntry(context.Background(), f.addr, bookieproto.AddRequest{LedgerID: 1, EntryID: entry, MasterKey: key, LAC: -1,
			Payload: payloadOf(1, entry, 100)}, func(err error) { ch <- err })
		return <-ch
	}
	good := client(&broker, ca.CertFile)
	if err := add(good, 0); err != nil {
		t.Fatalf("broker over TLS: %v", err)
	}
	if e, err := good.ReadEntry(context.Background(), f.addr, bookieproto.ReadRequest{LedgerID: 1, EntryID: 0}); err != nil || len(e.Payload) != 100 {
		t.Fatalf("read over TLS: %v", err)
	}
	for name, c := range map[string]bookieproto.Client{
		"no client certificate":     client(nil, ca.CertFile),
		"role not authorized":       client(&intruder, ca.CertFile),
		"certificate of another CA": client(&stranger, ca.CertFile),
		"plaintext":                 bookieproto.NewClient(bookieproto.ClientOptions{RequestTimeout: 5 * time.Second}),
		"does not trust the bookie": client(&broker, other.CertFile),
	} {
		err := add(c, 1)
		if err == nil {
			t.Errorf("%s: add accepted", name)
		}
		_ = c.Close()
	}
	// Nothing the refused clients sent was stored.
	if _, err := good.ReadEntry(context.Background(), f.addr, bookieproto.ReadRequest{LedgerID: 1, EntryID: 1}); !errors.Is(err, bookieproto.ErrNoSuchEntry) {
		t.Fatalf("entry from a refused client: %v", err)
	}
}
