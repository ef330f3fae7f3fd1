package registrationtest

import (
	"context"
	"errors"
	"log/slog"
	"testing"
	"time"

	"github.com/magnetar-io/magnetar/internal/metadata"
)

const wait = 30 * time.Second

// Run runs the registration checks on s; expire ends a session as if its keep-alives stopped.
func Run(t *testing.T, s metadata.Store, expire func(metadata.Session) error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*wait)
	defer cancel()
	key := "/registrationtest/" + t.Name()
	rec := &recordingStore{Store: s}
	opts := metadata.RegistrationOptions{TTL: time.Second, RetryInterval: 10 * time.Millisecond, MaxRetryInterval: 100 * time.Millisecond}
	r, err := metadata.Register(ctx, rec, key, []byte("writable"), opts, slog.Default())
	if err != nil {
		t.Fatal(err)
	}
	expectValue(t, s, key, "writable")
	if !r.Registered() {
		t.Fatal("not registered after Register")
	}

	if err := r.Update(ctx, []byte("readonly")); err != nil {
		t.Fatal(err)
	}
	expectValue(t, s, key, "readonly")

	// Lose the session: the key vanishes, then comes back with the latest value.
	ch, err := s.Watch(ctx, key, false)
	if err != nil {
		t.Fatal(err)
	}
	next(t, ch) // current state
	if err := expire(rec.lastSession()); err != nil {
		t.Fatal(err)
	}
	if ev := next(t, ch); ev.Type != metadata.EventDelete {
		t.Fatalf("after expiry: %+v, want delete", ev)
	}
	if ev := next(t, ch); ev.Type != metadata.EventPut || string(ev.Value) != "readonly" {
		t.Fatalf("after re-registration: %+v, want put readonly", ev)
	}
	if err := r.WaitRegistered(ctx); err != nil {
		t.Fatal(err)
	}
	if err := r.Update(ctx, []byte("writable")); err != nil {
		t.Fatal(err)
	}
	expectValue(t, s, key, "writable")

	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(wait)
	for {
		_, err := s.Get(ctx, key)
		if errors.Is(err, metadata.ErrNotFound) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("key still there after Close: %v", err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := r.Update(ctx, []byte("x")); !errors.Is(err, metadata.ErrRegistrationClosed) {
		t.Fatalf("Update after Close: %v", err)
	}
}

func next(t *testing.T, ch <-chan metadata.Event) metadata.Event {
	t.Helper()
	select {
	case ev, ok := <-ch:
		if !ok {
			t.Fatal("watch closed")
		}
		return ev
	case <-time.After(wait):
		t.Fatal("no event")
	}
	return metadata.Event{}
}

func expectValue(t *testing.T, s metadata.Store, key, want string) {
	t.Helper()
	kv, err := s.Get(context.Background(), key)
	if err != nil || string(kv.Value) != want {
		t.Fatalf("Get(%s) = %q, %v; want %q", key, kv.Value, err, want)
	}
}
