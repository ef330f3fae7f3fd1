package bookie

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/magnetar-io/magnetar/internal/bookie/storage"
	"github.com/magnetar-io/magnetar/internal/config"
	"github.com/magnetar-io/magnetar/internal/logging"
	"github.com/magnetar-io/magnetar/internal/metadata/memstore"
	"github.com/magnetar-io/magnetar/internal/resources"
)

func openDisk(cfg config.BookieStorageConfig, logger *slog.Logger, reg prometheus.Registerer) (storage.Storage, error) {
	return storage.Open(cfg, logger, reg)
}

// TestClusterCookieRefusesWipedOrForeignDisk: a bookie's identity is cluster-wide. Its first
// start writes the cookie of its address with its storage instance; a restart on the same
// disks passes; a wiped disk (a new, empty instance) or another bookie's disk at the same
// address is refused with ErrCookieMismatch before it serves, since ledgers still name the
// address. After the operator deletes the cookie, a new instance may join.
func TestClusterCookieRefusesWipedOrForeignDisk(t *testing.T) {
	md := memstore.New(memstore.DefaultOptions())
	defer md.Close()
	dirA, dirB := t.TempDir(), t.TempDir()
	const addr = "bookie-a.test:3181" // advertised; stays the same across restarts
	start := func(dir string) (*Bookie, error) {
		cfg := testConfig(dir)
		cfg.AdvertisedAddress = addr
		return Start(context.Background(), cfg, Options{Logger: logging.Discard(), Metadata: md, OpenStorage: openDisk})
	}
	b, err := start(dirA)
	if err != nil {
		t.Fatal(err)
	}
	instance := b.instanceID()
	waitFor(t, "registration with the instance id", func() bool {
		r, _, ok := registration(t, md, resources.BookieRegistrationsPrefix+addr)
		return ok && r.InstanceID == instance
	})
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	// The same disks again: the same instance.
	if b, err = start(dirA); err != nil {
		t.Fatalf("restart on its own disks: %v", err)
	}
	b.Close()

	// Another bookie's disks (an existing instance) at this address.
	cfgB := testConfig(dirB)
	st, err := storage.Open(cfgB.Storage, logging.Discard(), nil)
	if err != nil {
		t.Fatal(err)
	}
	st.Close()
	if _, err := start(dirB); !errors.Is(err, ErrCookieMismatch) || !errors.Is(err, storage.ErrCookie) || !strings.Contains(err.Error(), "another instance") {
		t.Fatalf("another instance's disks at %s: %v, want ErrCookieMismatch", addr, err)
	}

	// The disks wiped: a new empty instance must not serve under the old address.
	if err := os.RemoveAll(dirA); err != nil {
		t.Fatal(err)
	}
	_, err = start(dirA)
	if !errors.Is(err, ErrCookieMismatch) || !strings.Contains(err.Error(), "wiped") || !strings.Contains(err.Error(), instance) {
		t.Fatalf("wiped disks at %s: %v, want ErrCookieMismatch naming the old instance", addr, err)
	}
	if _, _, ok := registration(t, md, resources.BookieRegistrationsPrefix+addr); ok {
		t.Fatal("a refused bookie is registered")
	}

	// The operator deletes the cookie (after re-replicating the address's ledgers).
	if err := DeleteCookie(context.Background(), md, addr); err != nil {
		t.Fatal(err)
	}
	if b, err = start(dirA); err != nil {
		t.Fatalf("new instance after the cookie was deleted: %v", err)
	}
	defer b.Close()
	if b.instanceID() == instance {
		t.Fatal("the wiped disks kept the old instance id")
	}
}
