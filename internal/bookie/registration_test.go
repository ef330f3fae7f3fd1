package bookie

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/magnetar-io/magnetar/internal/bookie/storage"
	"github.com/magnetar-io/magnetar/internal/bookieproto"
	"github.com/magnetar-io/magnetar/internal/logging"
	"github.com/magnetar-io/magnetar/internal/metadata"
	"github.com/magnetar-io/magnetar/internal/metadata/memstore"
)

// waitFor polls cond until it holds, failing after a generous bound.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); !cond(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

func registration(t *testing.T, md metadata.Store, key string) (bookieproto.Registration, metadata.Version, bool) {
	t.Helper()
	kv, err := md.Get(context.Background(), key)
	if errors.Is(err, metadata.ErrNotFound) {
		return bookieproto.Registration{}, 0, false
	}
	if err != nil {
		t.Fatal(err)
	}
	var r bookieproto.Registration
	if err := json.Unmarshal(kv.Value, &r); err != nil {
		t.Fatalf("registration %q: %v", kv.Value, err)
	}
	return r, kv.Version, true
}

func TestRegistrationFollowsStateAndSession(t *testing.T) {
	md := memstore.New(memstore.DefaultOptions())
	defer md.Close()
	st := storage.NewMemory()
	cfg := testConfig(t.TempDir())
	cfg.Rack = "/rack-a"
	b, err := Start(context.Background(), cfg, Options{Logger: logging.Discard(), Storage: st, Metadata: md})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	regKey := bookieproto.RegistrationPrefix + b.AdvertisedAddr()
	if b.AdvertisedAddr() != b.Addr() {
		t.Fatalf("advertised %s, listening %s", b.AdvertisedAddr(), b.Addr())
	}
	waitFor(t, "writable registration", func() bool {
		r, _, ok := registration(t, md, regKey)
		return ok && r.State == bookieproto.StateWritable && r.Rack == "/rack-a" && r.Address == b.Addr()
	})

	st.SetReadOnly(true)
	waitFor(t, "read-only registration", func() bool {
		r, _, ok := registration(t, md, regKey)
		return ok && r.State == bookieproto.StateReadOnly
	})
	st.SetReadOnly(false)
	waitFor(t, "writable again", func() bool {
		r, _, ok := registration(t, md, regKey)
		return ok && r.State == bookieproto.StateWritable
	})

	// Session loss: the key vanishes, the bookie keeps serving and registers again.
	_, v1, _ := registration(t, md, regKey)
	old := b.reg.currentSession()
	if err := md.ExpireSession(old); err != nil {
		t.Fatal(err)
	}
	c := bookieproto.NewClient(bookieproto.ClientOptions{})
	defer c.Close()
	done := make(chan error, 1)
	c.AddEntry(context.Background(), b.Addr(), bookieproto.AddRequest{LedgerID: 1, MasterKey: key, LAC: -1, Payload: []byte("p")}, func(err error) { done <- err })
	if err := <-done; err != nil {
		t.Fatalf("data plane during session loss: %v", err)
	}
	waitFor(t, "re-registration with a new session", func() bool {
		_, v2, ok := registration(t, md, regKey)
		return ok && v2 != v1 && b.reg.currentSession() != old
	})

	// Clean shutdown deregisters at once.
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if _, _, ok := registration(t, md, regKey); ok {
		t.Fatal("registration left behind after Close")
	}
}
