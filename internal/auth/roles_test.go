package auth

import (
	"context"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"github.com/magnetar-io/magnetar/internal/config"
	"github.com/magnetar-io/magnetar/internal/metadata/connect"
	"github.com/magnetar-io/magnetar/internal/metadata/etcdstore"
)

// TestMetadataTLS runs an etcd member that serves TLS and requires client certificates:
// a role with metadataStoreConfigPath pointing at its certificate gets in; plaintext, no
// certificate and a certificate of another CA do not.
func TestMetadataTLS(t *testing.T) {
	dir := t.TempDir()
	ca, err := NewCA(filepath.Join(dir, "ca"), "metadata CA", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	other, _ := NewCA(filepath.Join(dir, "other"), "other CA", time.Hour)
	srv, _ := ca.Issue(IssueOptions{Name: "etcd", Hosts: []string{"127.0.0.1", "localhost"}})
	broker, _ := ca.Issue(IssueOptions{Name: "broker"})
	stranger, _ := other.Issue(IssueOptions{Name: "broker"})
	cfg := config.DefaultMetadataConfig()
	cfg.DataDir = filepath.Join(dir, "etcd")
	cfg.ListenClientURLs = []string{"https://127.0.0.1:0"}
	cfg.ListenPeerURLs = []string{"https://127.0.0.1:0"}
	cfg.HeartbeatInterval, cfg.ElectionTimeout = 20*time.Millisecond, 200*time.Millisecond
	cfg.TLS = config.MetadataServerTLSConfig{CertFile: srv.CertFile, KeyFile: srv.KeyFile, TrustedCAFile: ca.CertFile, ClientCertAuth: true,
		PeerCertFile: srv.CertFile, PeerKeyFile: srv.KeyFile, PeerTrustedCAFile: ca.CertFile, PeerClientCertAuth: true}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	log := slog.New(slog.DiscardHandler)
	m, err := etcdstore.StartEmbedded(ctx, cfg, log)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	url := "etcd://" + m.ClientURLs()[0][len("https://"):]
	open := func(trust, cert, key string) error {
		var c config.MetadataClientTLSConfig
		if trust != "" {
			c.ConfigPath = filepath.Join(t.TempDir(), "metadata.yaml")
			if err := WriteMetadataClientConfig(c.ConfigPath, trust, cert, key); err != nil {
				t.Fatal(err)
			}
		}
		tc, err := MetadataClientTLS(c, log)
		if err != nil {
			return err
		}
		u := url + "?dialTimeout=1s"
		st, err := connect.OpenTLS(ctx, u, tc, log)
		if err != nil {
			return err
		}
		defer st.Close()
		_, err = st.Put(ctx, "/sec-test", []byte("x"), -1)
		return err
	}
	if err := open(ca.CertFile, broker.CertFile, broker.KeyFile); err != nil {
		t.Fatalf("client with a certificate: %v", err)
	}
	for name, c := range map[string][3]string{
		"plaintext":               {"", "", ""},
		"no client certificate":   {ca.CertFile, "", ""},
		"another CA's client":     {ca.CertFile, stranger.CertFile, stranger.KeyFile},
		"not trusting the member": {other.CertFile, broker.CertFile, broker.KeyFile},
	} {
		if err := open(c[0], c[1], c[2]); err == nil {
			t.Errorf("%s: got in", name)
		}
	}
}
