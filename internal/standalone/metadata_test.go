package standalone_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/magnetar-io/magnetar/internal/config"
	"github.com/magnetar-io/magnetar/internal/metadata"
	"github.com/magnetar-io/magnetar/internal/standalone"
)

// TestMetadataStoreFollowsTheDataDirectory: a data directory made with the embedded etcd
// member keeps it when standaloneMetadataStore is unset, and asking for the other kind of store
// is refused instead of starting on empty metadata.
func TestMetadataStoreFollowsTheDataDirectory(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cfg := testConfig(t.TempDir())
	cfg.MetadataStore = config.MetadataStoreEtcd
	s := start(t, cfg)
	if _, err := s.Store().Put(ctx, "/marker", []byte("etcd"), metadata.NotExists); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(ctx); err != nil {
		t.Fatal(err)
	}

	cfg.MetadataStore = config.MetadataStoreLocal
	if s, err := standalone.Start(ctx, cfg, nil); !errors.Is(err, standalone.ErrMetadataStoreMismatch) {
		if s != nil {
			_ = s.Close(ctx)
		}
		t.Fatalf("local store over an etcd data directory: %v, want ErrMetadataStoreMismatch", err)
	}

	cfg.MetadataStore = ""
	s = start(t, cfg)
	kv, err := s.Store().Get(ctx, "/marker")
	if err != nil || string(kv.Value) != "etcd" {
		t.Fatalf("unset standaloneMetadataStore over an etcd data directory: %q, %v; want the etcd data", kv.Value, err)
	}
	if err := s.Close(ctx); err != nil {
		t.Fatal(err)
	}

	// And the other way round.
	cfg = testConfig(t.TempDir())
	s = start(t, cfg)
	if err := s.Close(ctx); err != nil {
		t.Fatal(err)
	}
	cfg.MetadataStore = config.MetadataStoreEtcd
	if s, err := standalone.Start(ctx, cfg, nil); !errors.Is(err, standalone.ErrMetadataStoreMismatch) {
		if s != nil {
			_ = s.Close(ctx)
		}
		t.Fatalf("etcd over a local-store data directory: %v, want ErrMetadataStoreMismatch", err)
	}
}
