package bookie

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/magnetar-io/magnetar/internal/bookie/storage"
	"github.com/magnetar-io/magnetar/internal/bookieproto"
	"github.com/magnetar-io/magnetar/internal/logging"
	"github.com/magnetar-io/magnetar/internal/metadata"
	"github.com/magnetar-io/magnetar/internal/metadata/memstore"
	"github.com/magnetar-io/magnetar/internal/resources"
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

func registration(t *testing.T, md metadata.Store, key string) (resources.BookieRegistration, metadata.Version, bool) {
	t.Helper()
	kv, err := md.Get(context.Background(), key)
	if errors.Is(err, metadata.ErrNotFound) {
		return resources.BookieRegistration{}, 0, false
	}
	if err != nil {
		t.Fatal(err)
	}
	var r resources.BookieRegistration
	if err := json.Unmarshal(kv.Value, &r); err != nil {
		t.Fatalf("registration %q: %v", kv.Value, err)
	}
	return r, kv.Version, true
}

// recordingStore remembers the last session opened through it, so the test can expire the
// session the bookie's registration uses.
type recordingStore struct {
	*memstore.Store
	mu   sync.Mutex
	last metadata.Session
}

func (s *recordingStore) NewSession(ctx context.Context, ttl time.Duration) (metadata.Session, error) {
	sess, err := s.Store.NewSession(ctx, ttl)
	if err == nil {
		s.mu.Lock()
		s.last = sess
		s.mu.Unlock()
	}
	return sess, err
}

func (s *recordingStore) lastSession() metadata.Session {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.last
}

func TestRegistrationFollowsStateAndSession(t *testing.T) {
	md := &recordingStore{Store: memstore.New(memstore.DefaultOptions())}
	defer md.Close()
	st := storage.NewMemory()
	cfg := testConfig(t.TempDir())
	cfg.Rack = "/rack-a"
	b, err := Start(context.Background(), cfg, Options{Logger: logging.Discard(), Storage: st, Metadata: md})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	regKey := resources.BookieRegistrationsPrefix + b.AdvertisedAddr()
	if b.AdvertisedAddr() != b.Addr() {
		t.Fatalf("advertised %s, listening %s", b.AdvertisedAddr(), b.Addr())
	}
	waitFor(t, "writable registration", func() bool {
		r, _, ok := registration(t, md, regKey)
		return ok && r.State == resources.BookieWritable && r.Rack == "/rack-a" && r.Address == b.Addr()
	})

	st.SetReadOnly(true)
	waitFor(t, "read-only registration", func() bool {
		r, _, ok := registration(t, md, regKey)
		return ok && r.State == resources.BookieReadOnly
	})
	st.SetReadOnly(false)
	waitFor(t, "writable again", func() bool {
		r, _, ok := registration(t, md, regKey)
		return ok && r.State == resources.BookieWritable
	})

	// Session loss: the key vanishes, the bookie keeps serving and registers again.
	_, v1, _ := registration(t, md, regKey)
	old := md.lastSession()
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
		return ok && v2 != v1 && md.lastSession() != old
	})

	// Clean shutdown deregisters at once.
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if _, _, ok := registration(t, md, regKey); ok {
		t.Fatal("registration left behind after Close")
	}
}

// flakyStore fails the first sessions, as a metadata store that is down at startup.
type flakyStore struct {
	*memstore.Store
	mu    sync.Mutex
	fails int
	tries int
}

func (s *flakyStore) attempts() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.tries
}

func (s *flakyStore) NewSession(ctx context.Context, ttl time.Duration) (metadata.Session, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.tries++
	if s.fails > 0 {
		s.fails--
		return nil, errors.New("flaky: store unreachable")
	}
	return s.Store.NewSession(ctx, ttl)
}

func TestRegistrationRetriesWhileServing(t *testing.T) {
	md := &flakyStore{Store: memstore.New(memstore.DefaultOptions()), fails: 3}
	defer md.Close()
	st := storage.NewMemory()
	b, err := Start(context.Background(), testConfig(t.TempDir()), Options{Logger: logging.Discard(), Storage: st, Metadata: md})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	f := &fixture{client: bookieproto.NewClient(bookieproto.ClientOptions{}), addr: b.Addr()}
	defer f.client.Close()
	mustAdd(t, f, 1, 0, -1, []byte("served before registration"))
	waitFor(t, "registration after the store came back", func() bool {
		_, _, ok := registration(t, md, resources.BookieRegistrationsPrefix+b.AdvertisedAddr())
		return ok
	})
	waitFor(t, "Ready once registered", b.Ready)
}

// TestNotReadyWhileUnregistered: a bookie that serves but cannot register is not ready (its
// readiness probe must keep it out of service: no client would place a ledger on it).
func TestNotReadyWhileUnregistered(t *testing.T) {
	md := &flakyStore{Store: memstore.New(memstore.DefaultOptions()), fails: 1 << 30}
	defer md.Close()
	b, err := Start(context.Background(), testConfig(t.TempDir()), Options{Logger: logging.Discard(), Storage: storage.NewMemory(), Metadata: md})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	waitFor(t, "registration attempts", func() bool { return md.attempts() > 1 })
	if b.Ready() {
		t.Fatal("Ready while the registration keeps failing")
	}
}
