package memstore

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

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

// TestListMatchesModel drives random puts, deletes and ephemeral keys of expiring sessions
// through a store and checks every prefix listing against a plain map: List reads the
// ordered key index, which each path that adds or removes a key must keep in step.
func TestListMatchesModel(t *testing.T) {
	s := New(DefaultOptions())
	defer s.Close()
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(1, 2))
	model := map[string]string{}
	owned := map[string]bool{} // ephemeral keys of sess
	sess, err := s.NewSession(ctx, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	key := func() string {
		parts := []string{"/a", "/a/", "/a/b", "/a/b/", "/ab", "/b"}
		return fmt.Sprintf("%s%d", parts[rng.IntN(len(parts))], rng.IntN(40))
	}
	for i := range 4000 {
		k := key()
		switch op := rng.IntN(10); {
		case op < 5:
			v := fmt.Sprint(i)
			if _, err := s.Put(ctx, k, []byte(v), metadata.AnyVersion); err != nil {
				t.Fatal(err)
			}
			model[k], owned[k] = v, false
		case op < 8:
			err := s.Delete(ctx, k, metadata.AnyVersion)
			if _, ok := model[k]; ok != (err == nil) {
				t.Fatalf("delete %s: %v, in model %v", k, err, ok)
			}
			delete(model, k)
			delete(owned, k)
		case op < 9:
			v := fmt.Sprint(i)
			if _, err := sess.PutEphemeral(ctx, k, []byte(v), metadata.AnyVersion); err != nil {
				t.Fatal(err)
			}
			model[k], owned[k] = v, true
		default: // the session's lease ends: its keys vanish
			if err := s.ExpireSession(sess); err != nil {
				t.Fatal(err)
			}
			for k, eph := range owned {
				if eph {
					delete(model, k)
					delete(owned, k)
				}
			}
			if sess, err = s.NewSession(ctx, time.Minute); err != nil {
				t.Fatal(err)
			}
		}
		if i%50 != 0 {
			continue
		}
		for _, prefix := range []string{"", "/", "/a", "/a/", "/a/b", "/ab", "/b", "/c"} {
			var keys, want []string
			for k := range model {
				if strings.HasPrefix(k, prefix) {
					keys = append(keys, k)
				}
			}
			slices.Sort(keys)
			for _, k := range keys {
				want = append(want, k+"="+model[k])
			}
			kvs, err := s.List(ctx, prefix)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, kv := range kvs {
				got = append(got, kv.Key+"="+string(kv.Value))
			}
			if !slices.Equal(got, want) {
				t.Fatalf("op %d: List(%q) = %v\nwant %v", i, prefix, got, want)
			}
		}
	}
}

// BenchmarkListAmongManyKeys lists one small prefix in a store of 200,000 keys (50,000
// topics' worth), as opening a topic lists its cursors.
func BenchmarkListAmongManyKeys(b *testing.B) {
	s := New(DefaultOptions())
	defer s.Close()
	ctx := context.Background()
	for i := range 200000 {
		if _, err := s.Put(ctx, fmt.Sprintf("/managed-ledgers/t/ns/persistent/topic-%d/c", i), nil, metadata.AnyVersion); err != nil {
			b.Fatal(err)
		}
	}
	b.ResetTimer()
	for i := range b.N {
		if _, err := s.List(ctx, fmt.Sprintf("/managed-ledgers/t/ns/persistent/topic-%d/", i%200000)); err != nil {
			b.Fatal(err)
		}
	}
}
