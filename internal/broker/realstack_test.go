package broker

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/magnetar-io/magnetar/internal/bookie"
	"github.com/magnetar-io/magnetar/internal/bookie/storage"
	"github.com/magnetar-io/magnetar/internal/bookieproto"
	"github.com/magnetar-io/magnetar/internal/config"
	"github.com/magnetar-io/magnetar/internal/ledger"
	"github.com/magnetar-io/magnetar/internal/ledger/memledger"
	"github.com/magnetar-io/magnetar/internal/metadata"
	"github.com/magnetar-io/magnetar/internal/metadata/etcdstore"
	"github.com/magnetar-io/magnetar/internal/metadata/memstore"
)

// testBackend chooses what the broker's end-to-end tests store topics in:
//
//	real   (default) embedded etcd + a bookie on disk storage + the replicated ledger client,
//	       the same stack `magnetar standalone` runs, one per test
//	memory memstore + memledger, for fast iteration on broker logic (MAGNETAR_BROKER_TEST_BACKEND=memory)
func testBackend() string {
	if b := os.Getenv("MAGNETAR_BROKER_TEST_BACKEND"); b != "" {
		return b
	}
	return "real"
}

// newTestStorage returns the metadata store and ledger client a test broker runs on, torn
// down with the test.
func newTestStorage(t testing.TB, logger *slog.Logger) (metadata.Store, ledger.Client) {
	t.Helper()
	if testBackend() == "memory" {
		return memstore.New(memstore.DefaultOptions()), memledger.New()
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	dir := t.TempDir()
	mdCfg := config.DefaultMetadataConfig()
	mdCfg.DataDir = filepath.Join(dir, "metadata")
	mdCfg.ListenClientURLs = []string{"http://127.0.0.1:0"}
	mdCfg.ListenPeerURLs = []string{"http://127.0.0.1:0"}
	etcd, err := etcdstore.StartEmbedded(ctx, mdCfg, logger)
	if err != nil {
		t.Fatal(err)
	}
	store, err := etcd.Open(ctx, logger)
	if err != nil {
		etcd.Close()
		t.Fatal(err)
	}
	bkCfg := config.DefaultBookieConfig()
	bkCfg.ListenAddress = "127.0.0.1:0"
	bkCfg.Storage.JournalDirectories = []string{filepath.Join(dir, "journal")}
	bkCfg.Storage.LedgerDirectories = []string{filepath.Join(dir, "ledgers")}
	bkCfg.Storage.WriteCacheMaxSizeMB, bkCfg.Storage.ReadAheadCacheMaxSizeMB = 16, 16
	bk, err := bookie.Start(ctx, bkCfg, bookie.Options{
		Logger: logger, Metadata: store,
		OpenStorage: func(c config.BookieStorageConfig, l *slog.Logger, _ prometheus.Registerer) (storage.Storage, error) {
			return storage.Open(c, l, nil)
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	bkClient := bookieproto.NewClient(bookieproto.ClientOptions{Logger: logger})
	lc, err := ledger.NewClient(ctx, ledger.ClientOptions{Config: config.DefaultLedgerClientConfig(), Store: store, Bookies: bkClient, Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	// Wait until the ledger client sees the bookie, so the first topic can create a ledger.
	for deadline := time.Now().Add(30 * time.Second); ; {
		bs, err := ledger.ListBookies(ctx, store)
		if err == nil && len(bs) == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("bookie never registered: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	// Cleanups run last-registered first: this one runs after the broker's and factory's.
	t.Cleanup(func() {
		_ = lc.Close()
		_ = bkClient.Close()
		_ = bk.Close()
		_ = store.Close()
		etcd.Close()
	})
	return store, lc
}
