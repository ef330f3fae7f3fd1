package memstore

import (
	"context"
	"testing"

	"github.com/magnetar-io/magnetar/internal/metadata"
	"github.com/magnetar-io/magnetar/internal/metadata/storetest"
)

func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) metadata.Store { return New(DefaultOptions()) })
}

// TestConformanceSharedState runs the suite on handles of one shared state, as connect's
// memory:// URLs hand out.
func TestConformanceSharedState(t *testing.T) {
	root := New(DefaultOptions())
	t.Cleanup(func() { _ = root.Close() })
	storetest.Run(t, func(t *testing.T) metadata.Store { return root.NewClient() })
}

func TestWatchSlowConsumerCutOff(t *testing.T) {
	s := New(Options{MaxWatchBacklog: 8})
	defer s.Close()
	ctx := context.Background()
	ch, err := s.Watch(ctx, "/w/", true)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 100 {
		if _, err := s.Put(ctx, "/w/k", []byte{byte(i)}, metadata.AnyVersion); err != nil {
			t.Fatal(err)
		}
	}
	n := 0
	for range ch {
		n++
	}
	if n > 9 {
		t.Fatalf("slow consumer got %d events, want the channel closed after at most the backlog", n)
	}
	// Watching again gives the current state.
	ch, err = s.Watch(ctx, "/w/", true)
	if err != nil {
		t.Fatal(err)
	}
	if ev := <-ch; ev.Key != "/w/k" || ev.Value[0] != 99 {
		t.Fatalf("re-watch first event = %+v", ev)
	}
}

func TestCloseHandleEndsOnlyItsSessions(t *testing.T) {
	a := New(DefaultOptions())
	b := a.NewClient()
	ctx := context.Background()
	sa, _ := a.NewSession(ctx, 1)
	sb, _ := b.NewSession(ctx, 1)
	if _, err := sa.PutEphemeral(ctx, "/a", nil, metadata.AnyVersion); err != nil {
		t.Fatal(err)
	}
	if _, err := sb.PutEphemeral(ctx, "/b", nil, metadata.AnyVersion); err != nil {
		t.Fatal(err)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	<-sb.Done()
	if _, err := a.Get(ctx, "/b"); err == nil {
		t.Fatal("closed handle's ephemeral key survived")
	}
	if _, err := a.Get(ctx, "/a"); err != nil {
		t.Fatalf("other handle's key: %v", err)
	}
}
