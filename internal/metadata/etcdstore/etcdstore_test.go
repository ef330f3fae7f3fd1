package etcdstore

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/magnetar-io/magnetar/internal/config"
	"github.com/magnetar-io/magnetar/internal/metadata"
	"github.com/magnetar-io/magnetar/internal/metadata/registrationtest"
	"github.com/magnetar-io/magnetar/internal/metadata/storetest"
)

func testLogger() *slog.Logger {
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
}

// singleMember returns a config for one fresh member on free loopback ports, with raft timing
// shortened so that sessions can expire quickly (etcd's minimum lease TTL is 1.5 election
// timeouts).
func singleMember(t *testing.T) config.MetadataConfig {
	t.Helper()
	cfg := config.DefaultMetadataConfig()
	cfg.DataDir = filepath.Join(t.TempDir(), "etcd") // etcd creates it 0700
	cfg.ListenClientURLs = []string{"http://127.0.0.1:0"}
	cfg.ListenPeerURLs = []string{"http://127.0.0.1:0"}
	cfg.HeartbeatInterval = 20 * time.Millisecond
	cfg.ElectionTimeout = 200 * time.Millisecond
	return cfg
}

func startMember(t *testing.T, cfg config.MetadataConfig) *Embedded {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	start := time.Now()
	m, err := StartEmbedded(ctx, cfg, testLogger())
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("member %s ready in %v", cfg.Name, time.Since(start))
	t.Cleanup(m.Close)
	return m
}

func openStore(t *testing.T, m *Embedded) *Store {
	t.Helper()
	s, err := m.Open(context.Background(), testLogger())
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestConformanceEmbedded(t *testing.T) {
	m := startMember(t, singleMember(t))
	storetest.Run(t, func(t *testing.T) metadata.Store { return openStore(t, m) })
}

func TestWatchSlowConsumerCutOff(t *testing.T) {
	m := startMember(t, singleMember(t))
	s, err := Open(context.Background(), Options{Endpoints: m.ClientURLs(), MaxWatchBacklog: 4}, testLogger())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	ch, err := s.Watch(ctx, "/w/", true)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 50 {
		if _, err := s.Put(ctx, "/w/k", []byte{byte(i)}, metadata.AnyVersion); err != nil {
			t.Fatal(err)
		}
	}
	n := 0
	for range ch {
		n++
	}
	if n >= 50 {
		t.Fatalf("slow consumer got all %d events; want its watch cut off", n)
	}
}

// TestSessionExpiresWhenKeepAlivesStop closes the client under a session, so no keep-alive
// reaches etcd any more: the lease must expire, its key vanish, and Done fire.
func TestSessionExpiresWhenKeepAlivesStop(t *testing.T) {
	m := startMember(t, singleMember(t))
	observer := openStore(t, m)
	defer observer.Close()
	victim := openStore(t, m)
	ctx := context.Background()
	sess, err := victim.NewSession(ctx, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sess.PutEphemeral(ctx, "/eph", []byte("x"), metadata.NotExists); err != nil {
		t.Fatal(err)
	}
	ch, err := observer.Watch(ctx, "/eph", false)
	if err != nil {
		t.Fatal(err)
	}
	if ev := <-ch; ev.Type != metadata.EventPut {
		t.Fatalf("first event %+v", ev)
	}
	// Close the raw client, not the Store: Store.Close would revoke the lease politely.
	if err := victim.Client().Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-sess.Done():
	case <-time.After(30 * time.Second):
		t.Fatal("session Done not closed after its client went away")
	}
	select {
	case ev := <-ch:
		if ev.Type != metadata.EventDelete {
			t.Fatalf("event %+v, want the ephemeral key deleted", ev)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("ephemeral key not deleted after the lease TTL")
	}
	if _, err := observer.Get(ctx, "/eph"); !errors.Is(err, metadata.ErrNotFound) {
		t.Fatalf("Get after expiry: %v", err)
	}
}

func TestRegistrationEtcd(t *testing.T) {
	m := startMember(t, singleMember(t))
	s := openStore(t, m)
	defer s.Close()
	registrationtest.Run(t, s, s.ExpireSession)
}

func TestOpenUnreachable(t *testing.T) {
	start := time.Now()
	_, err := Open(context.Background(), Options{Endpoints: []string{"http://127.0.0.1:1"}, DialTimeout: 500 * time.Millisecond}, testLogger())
	if err == nil {
		t.Fatal("Open of a closed port succeeded")
	}
	t.Logf("Open failed after %v: %v", time.Since(start), err)
}
