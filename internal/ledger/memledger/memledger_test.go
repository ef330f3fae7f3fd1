package memledger

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/magnetar-io/magnetar/internal/ledger"
)

var opts = ledger.CreateOptions{EnsembleSize: 3, WriteQuorum: 2, AckQuorum: 2, Password: []byte("pw")}

func TestAppendOrderReadAndClose(t *testing.T) {
	ctx := context.Background()
	c := New()
	w, err := c.Create(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var got []int64
	var wg sync.WaitGroup
	for i := 0; i < 100; i++ {
		wg.Add(1)
		w.AppendAsync([]byte{byte(i)}, func(id int64, err error) {
			defer wg.Done()
			if err != nil {
				t.Error(err)
			}
			mu.Lock()
			got = append(got, id)
			mu.Unlock()
		})
	}
	wg.Wait()
	for i, id := range got {
		if id != int64(i) {
			t.Fatalf("completion %d has entry id %d", i, id)
		}
	}
	if w.LastAddConfirmed() != 99 {
		t.Fatalf("LAC %d", w.LastAddConfirmed())
	}
	r, err := c.Open(ctx, w.ID(), ledger.OpenOptions{Password: []byte("pw")})
	if err != nil {
		t.Fatal(err)
	}
	es, err := r.Read(ctx, 10, 12)
	if err != nil || len(es) != 3 || es[0].Data[0] != 10 {
		t.Fatalf("read %v %v", es, err)
	}
	if _, err := r.Read(ctx, 99, 100); !errors.Is(err, ledger.ErrNoSuchEntry) {
		t.Fatalf("read past LAC: %v", err)
	}
	if err := w.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if !r.IsClosed() {
		t.Fatal("ledger not closed")
	}
	if _, err := w.Append(ctx, []byte("x")); !errors.Is(err, ledger.ErrClosed) {
		t.Fatalf("append after close: %v", err)
	}
	if _, err := c.Open(ctx, w.ID(), ledger.OpenOptions{}); !errors.Is(err, ledger.ErrBadArgument) {
		t.Fatalf("wrong password: %v", err)
	}
}

func TestRecoveryFencesWriter(t *testing.T) {
	ctx := context.Background()
	c := New()
	w, _ := c.Create(ctx, opts)
	if _, err := w.Append(ctx, []byte("a")); err != nil {
		t.Fatal(err)
	}
	r, err := c.Open(ctx, w.ID(), ledger.OpenOptions{Recovery: true, Password: []byte("pw")})
	if err != nil {
		t.Fatal(err)
	}
	if r.LastAddConfirmed() != 0 || !r.IsClosed() {
		t.Fatalf("recovered LAC %d closed %v", r.LastAddConfirmed(), r.IsClosed())
	}
	if _, err := w.Append(ctx, []byte("b")); !errors.Is(err, ledger.ErrFenced) {
		t.Fatalf("append after fence: %v", err)
	}
	if err := w.Close(ctx); !errors.Is(err, ledger.ErrFenced) {
		t.Fatalf("close after fence: %v", err)
	}
}

func TestFaultsAndDelete(t *testing.T) {
	ctx := context.Background()
	c := New()
	if _, err := c.Create(ctx, ledger.CreateOptions{EnsembleSize: 1, WriteQuorum: 2, AckQuorum: 1}); !errors.Is(err, ledger.ErrBadArgument) {
		t.Fatalf("bad quorum: %v", err)
	}
	boom := errors.New("boom")
	c.SetFaults(Faults{AppendError: func(_, eid int64) error {
		if eid == 1 {
			return boom
		}
		return nil
	}})
	w, _ := c.Create(ctx, opts)
	if _, err := w.Append(ctx, []byte("a")); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Append(ctx, []byte("b")); !errors.Is(err, boom) {
		t.Fatalf("faulted append: %v", err)
	}
	c.SetFaults(Faults{})
	if _, err := w.Append(ctx, []byte("c")); !errors.Is(err, boom) {
		t.Fatalf("append after a failure must fail too: %v", err)
	}
	if err := c.Delete(ctx, w.ID()); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Open(ctx, w.ID(), ledger.OpenOptions{Password: []byte("pw")}); !errors.Is(err, ledger.ErrNoSuchLedger) {
		t.Fatalf("open deleted: %v", err)
	}
	if err := c.Delete(ctx, w.ID()); !errors.Is(err, ledger.ErrNoSuchLedger) {
		t.Fatalf("delete twice: %v", err)
	}
	if d := c.Deleted(); len(d) != 1 || d[0] != w.ID() {
		t.Fatalf("deleted %v", d)
	}
}

func TestWaitLastAddConfirmed(t *testing.T) {
	ctx := context.Background()
	c := New()
	w, _ := c.Create(ctx, opts)
	r, _ := c.Open(ctx, w.ID(), ledger.OpenOptions{Password: []byte("pw")})
	done := make(chan int64)
	go func() {
		lac, err := r.WaitLastAddConfirmed(ctx, -1)
		if err != nil {
			t.Error(err)
		}
		done <- lac
	}()
	// The first entry becomes readable only when the next add carries its LAC.
	for _, d := range []string{"a", "b"} {
		if _, err := w.Append(ctx, []byte(d)); err != nil {
			t.Fatal(err)
		}
	}
	if lac := <-done; lac != 0 {
		t.Fatalf("woke with LAC %d", lac)
	}
	if lac, _ := r.ReadLastAddConfirmed(ctx); lac != 0 {
		t.Fatalf("LAC of an open ledger %d, want the piggybacked 0", lac)
	}
	if err := w.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if lac, _ := r.ReadLastAddConfirmed(ctx); lac != 1 {
		t.Fatalf("LAC after close %d, want 1", lac)
	}
}
