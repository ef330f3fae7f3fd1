package watchq

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/magnetar-io/magnetar/internal/metadata"
)

func ev(i int) metadata.Event {
	return metadata.Event{Type: metadata.EventPut, Key: fmt.Sprint(i), Version: metadata.Version(i)}
}

func drain(t *testing.T, q *Queue) []metadata.Event {
	t.Helper()
	var out []metadata.Event
	timeout := time.After(20 * time.Second)
	for {
		select {
		case e, ok := <-q.C():
			if !ok {
				return out
			}
			out = append(out, e)
		case <-timeout:
			t.Fatal("channel not closed")
		}
	}
}

func TestInitialThenChangesInOrderThenEnd(t *testing.T) {
	// The initial state may be far larger than the limit.
	var initial []metadata.Event
	for i := range 10 {
		initial = append(initial, ev(i))
	}
	q := New(context.Background(), 2, initial)
	if !q.Push(ev(10)) || !q.Push(ev(11)) {
		t.Fatal("Push within the limit refused")
	}
	q.End()
	if q.Push(ev(12)) {
		t.Fatal("Push after End accepted")
	}
	got := drain(t, q)
	if len(got) != 12 {
		t.Fatalf("got %d events, want 12", len(got))
	}
	for i, e := range got {
		if e.Version != metadata.Version(i) {
			t.Fatalf("event %d has version %d", i, e.Version)
		}
	}
	<-q.Done()
}

func TestOverflowClosesWithoutDelivering(t *testing.T) {
	q := New(context.Background(), 3, nil)
	for i := range 3 {
		if !q.Push(ev(i)) {
			t.Fatalf("Push %d refused", i)
		}
	}
	// Give the feeder a chance to take one event as its head; either way the fifth overflows.
	q.Push(ev(3))
	if q.Push(ev(4)) && q.Push(ev(5)) {
		t.Fatal("Push beyond the limit accepted")
	}
	if !q.Overflowed() {
		t.Fatal("not marked overflowed")
	}
	if got := drain(t, q); len(got) > 1 {
		t.Fatalf("overflowed queue delivered %d events; at most the one in hand may get out", len(got))
	}
}

func TestCancelCloses(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	q := New(ctx, 10, []metadata.Event{ev(0)})
	cancel()
	drain(t, q)
	<-q.Done()
	if q.Push(ev(1)) {
		t.Fatal("Push after cancel accepted")
	}
}
