package etcdstore

import (
	"context"
	"testing"

	"github.com/magnetar-io/magnetar/internal/config"
	"github.com/magnetar-io/magnetar/internal/metadata/storetest"
)

// BenchmarkEmbedded measures operations against an embedded member on loopback with default
// raft timing and fsync on, i.e. what standalone paid per metadata write before localstore.
func BenchmarkEmbedded(b *testing.B) {
	cfg := config.DefaultMetadataConfig()
	cfg.DataDir = b.TempDir() + "/etcd"
	cfg.ListenClientURLs = []string{"http://127.0.0.1:0"}
	cfg.ListenPeerURLs = []string{"http://127.0.0.1:0"}
	m, err := StartEmbedded(context.Background(), cfg, testLogger())
	if err != nil {
		b.Fatal(err)
	}
	defer m.Close()
	s, err := m.Open(context.Background(), testLogger())
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	storetest.Benchmark(b, s)
}
