package etcdstore

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/magnetar-io/magnetar/internal/metadata"
)

// TestRegistrationSurvivesMemberRestart stops the only etcd member for longer than the
// session TTL, so the session is lost while the store is unreachable, then starts it again
// on the same ports and data: the Registration must come back by itself, with its value.
func TestRegistrationSurvivesMemberRestart(t *testing.T) {
	ports := freePorts(t, 2)
	cfg := singleMember(t)
	cfg.DataDir = filepath.Join(t.TempDir(), "etcd")
	cfg.ListenClientURLs = []string{fmt.Sprintf("http://127.0.0.1:%d", ports[0])}
	cfg.ListenPeerURLs = []string{fmt.Sprintf("http://127.0.0.1:%d", ports[1])}
	m := startMember(t, cfg)
	s := openStore(t, m)
	defer s.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	opts := metadata.RegistrationOptions{TTL: time.Second, RetryInterval: 50 * time.Millisecond, MaxRetryInterval: 500 * time.Millisecond}
	r, err := metadata.Register(ctx, s, "/bookies/available/b1", []byte("writable"), opts, testLogger())
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()

	m.Close()
	for r.Registered() {
		select {
		case <-ctx.Done():
			t.Fatal("registration still reported live long after its store went away")
		case <-time.After(20 * time.Millisecond):
		}
	}
	// The owner changes its state while the store is down; the change must not be lost.
	uctx, ucancel := context.WithTimeout(ctx, 100*time.Millisecond)
	_ = r.Update(uctx, []byte("readonly"))
	ucancel()

	startMember(t, cfg)
	if err := r.WaitRegistered(ctx); err != nil {
		t.Fatal(err)
	}
	kv, err := s.Get(ctx, "/bookies/available/b1")
	if err != nil || string(kv.Value) != "readonly" {
		t.Fatalf("after restart: %q, %v; want readonly", kv.Value, err)
	}
}
