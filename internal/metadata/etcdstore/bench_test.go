package etcdstore

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/magnetar-io/magnetar/internal/config"
	"github.com/magnetar-io/magnetar/internal/metadata"
)

// BenchmarkEmbedded measures single-client operations against an embedded member on loopback
// with default raft timing and fsync on, i.e. what standalone pays per metadata write.
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
	ctx := context.Background()
	b.Run("PutCAS", func(b *testing.B) {
		v, err := s.Put(ctx, "/bench/cas", []byte("x"), metadata.AnyVersion)
		if err != nil {
			b.Fatal(err)
		}
		for b.Loop() {
			if v, err = s.Put(ctx, "/bench/cas", []byte("x"), v); err != nil {
				b.Fatal(err)
			}
		}
	})
	var n atomic.Int64 // across rounds too: b.Run calls the function once per round
	b.Run("PutCASParallel", func(b *testing.B) {
		b.RunParallel(func(pb *testing.PB) {
			key := fmt.Sprintf("/bench/par/%d", n.Add(1))
			v := metadata.NotExists
			for pb.Next() {
				var err error
				if v, err = s.Put(ctx, key, []byte("x"), v); err != nil {
					b.Error(err)
					return
				}
			}
		})
	})
	b.Run("Get", func(b *testing.B) {
		for b.Loop() {
			if _, err := s.Get(ctx, "/bench/cas"); err != nil {
				b.Fatal(err)
			}
		}
	})
}
