package ledger

import (
	"context"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/magnetar-io/magnetar/internal/bookie"
	"github.com/magnetar-io/magnetar/internal/bookie/storage"
	"github.com/magnetar-io/magnetar/internal/bookieproto"
	"github.com/magnetar-io/magnetar/internal/config"
	"github.com/magnetar-io/magnetar/internal/metadata"
	"github.com/magnetar-io/magnetar/internal/metadata/memstore"
	"github.com/magnetar-io/magnetar/internal/resources"
)

// realCluster runs real bookie servers in this process: disk storage (journal, entry logs,
// Pebble index) under t.TempDir(), the bookie protocol over TCP on 127.0.0.1, registration
// in a memory metadata store.
type realCluster struct {
	t     testing.TB
	store *memstore.Store
	probe bookieproto.Client

	mu      sync.Mutex
	bookies map[string]*bookie.Bookie
}

func newRealCluster(t testing.TB, n int) (*realCluster, []string) {
	rc := &realCluster{t: t, store: memstore.New(memstore.DefaultOptions()), bookies: map[string]*bookie.Bookie{}}
	rc.probe = bookieproto.NewClient(bookieproto.ClientOptions{})
	t.Cleanup(func() {
		rc.probe.Close()
		rc.mu.Lock()
		defer rc.mu.Unlock()
		for _, b := range rc.bookies {
			b.Close()
		}
	})
	var addrs []string
	for range n {
		addrs = append(addrs, rc.start())
	}
	return rc, addrs
}

func (rc *realCluster) start() string {
	dir := rc.t.TempDir()
	cfg := config.DefaultBookieConfig()
	cfg.ListenAddress = "127.0.0.1:0"
	cfg.MetadataSessionTimeoutMillis = 2000
	cfg.ShutdownTimeout = time.Second
	cfg.Storage.JournalDirectories = []string{dir + "/journal"}
	cfg.Storage.LedgerDirectories = []string{dir + "/ledgers"}
	b, err := bookie.Start(context.Background(), cfg, bookie.Options{
		Logger:     testLogger(rc.t),
		Registerer: prometheus.NewRegistry(),
		Metadata:   rc.store,
		OpenStorage: func(cfg config.BookieStorageConfig, logger *slog.Logger, reg prometheus.Registerer) (storage.Storage, error) {
			return storage.Open(cfg, logger, reg)
		},
	})
	if err != nil {
		rc.t.Fatal(err)
	}
	addr := b.AdvertisedAddr()
	rc.mu.Lock()
	rc.bookies[addr] = b
	rc.mu.Unlock()
	// Wait for the registration so that clients created next see the bookie.
	waitFor(rc.t, func() bool {
		_, err := rc.store.Get(context.Background(), resources.BookieRegistrationsPrefix+addr)
		return err == nil
	})
	return addr
}

func (rc *realCluster) metaStore() metadata.Store { return rc.store }

func (rc *realCluster) newBookieClient() bookieproto.Client {
	c := bookieproto.NewClient(bookieproto.ClientOptions{})
	rc.t.Cleanup(func() { c.Close() })
	return c
}

func (rc *realCluster) kill(addr string) {
	rc.mu.Lock()
	b := rc.bookies[addr]
	delete(rc.bookies, addr)
	rc.mu.Unlock()
	if b == nil {
		rc.t.Fatalf("no bookie %s", addr)
	}
	if err := b.Close(); err != nil {
		rc.t.Logf("closing bookie %s: %v", addr, err)
	}
}

func (rc *realCluster) hasEntry(addr string, ledgerID, entryID int64) bool {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, err := rc.probe.ReadEntry(ctx, addr, bookieproto.ReadRequest{LedgerID: ledgerID, EntryID: entryID})
	return err == nil
}

// The scenario tests again, on real bookie servers over TCP.
func TestRealBookies(t *testing.T) {
	if testing.Short() {
		t.Skip("real bookies: not in -short")
	}
	for _, tc := range []struct {
		name    string
		bookies int
		run     func(t *testing.T, rc *realCluster, addrs []string)
	}{
		{"KillBookieMidStream", 4, func(t *testing.T, rc *realCluster, _ []string) { testKillBookieMidStream(t, rc) }},
		{"Striping", 5, func(t *testing.T, rc *realCluster, addrs []string) { testStriping(t, rc, addrs) }},
		{"SecondWriterRecovers", 3, func(t *testing.T, rc *realCluster, _ []string) { testSecondWriterRecoversAndFencesFirst(t, rc) }},
		{"RecoveryAcrossEnsembleChange", 5, func(t *testing.T, rc *realCluster, _ []string) { testRecoveryAcrossEnsembleChange(t, rc) }},
		{"AuditorReplicatesLostBookie", 5, func(t *testing.T, rc *realCluster, _ []string) { testAuditorReplicatesLostBookie(t, rc) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rc, addrs := newRealCluster(t, tc.bookies)
			tc.run(t, rc, addrs)
		})
	}
}
