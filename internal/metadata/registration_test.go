package metadata_test

import (
	"context"
	"errors"
	"log/slog"
	"testing"
	"time"

	"github.com/magnetar-io/magnetar/internal/metadata"
	"github.com/magnetar-io/magnetar/internal/metadata/memstore"
	"github.com/magnetar-io/magnetar/internal/metadata/registrationtest"
)

func TestRegistrationMemstore(t *testing.T) {
	s := memstore.New(memstore.DefaultOptions())
	defer s.Close()
	registrationtest.Run(t, s, s.ExpireSession)
}

// A store that is down at startup makes Register fail at once; nothing is left behind.
func TestRegisterFailsOnClosedStore(t *testing.T) {
	s := memstore.New(memstore.DefaultOptions())
	_ = s.Close()
	_, err := metadata.Register(context.Background(), s, "/k", nil, metadata.DefaultRegistrationOptions(), slog.Default())
	if !errors.Is(err, metadata.ErrClosed) {
		t.Fatalf("Register on closed store: %v", err)
	}
}

// Losing the session while the store is unreachable keeps retrying until it is back.
func TestRegistrationRetriesUntilStoreAnswers(t *testing.T) {
	s := memstore.New(memstore.DefaultOptions())
	defer s.Close()
	flaky := &failingStore{Store: s}
	ctx := context.Background()
	r, err := metadata.Register(ctx, flaky, "/reg", []byte("v"), metadata.RegistrationOptions{TTL: time.Second, RetryInterval: time.Millisecond, MaxRetryInterval: 5 * time.Millisecond}, slog.Default())
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	flaky.setFail(true)
	var sess metadata.Session = flaky.last
	if err := s.ExpireSession(sess); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool { return !r.Registered() })
	waitFor(t, func() bool { return flaky.attempts() >= 3 })
	if _, err := s.Get(ctx, "/reg"); !errors.Is(err, metadata.ErrNotFound) {
		t.Fatalf("key present while the store refuses sessions: %v", err)
	}
	flaky.setFail(false)
	ctx2, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	if err := r.WaitRegistered(ctx2); err != nil {
		t.Fatal(err)
	}
	if kv, err := s.Get(ctx, "/reg"); err != nil || string(kv.Value) != "v" {
		t.Fatalf("after recovery: %v %v", kv, err)
	}
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not reached in 20s")
		}
		time.Sleep(time.Millisecond)
	}
}

// A store closed under a registration ends it instead of retrying forever.
func TestRegistrationEndsWhenStoreCloses(t *testing.T) {
	s := memstore.New(memstore.DefaultOptions())
	r, err := metadata.Register(context.Background(), s, "/k", []byte("v"), metadata.DefaultRegistrationOptions(), slog.Default())
	if err != nil {
		t.Fatal(err)
	}
	_ = s.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := r.Update(ctx, []byte("w")); !errors.Is(err, metadata.ErrRegistrationClosed) {
		t.Fatalf("Update after the store closed: %v, want ErrRegistrationClosed", err)
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
}
