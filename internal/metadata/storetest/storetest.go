package storetest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/magnetar-io/magnetar/internal/metadata"
)

// Expirer is implemented by stores (or their test wrappers) that can end a session as if its
// keep-alives had stopped for its TTL.
type Expirer interface {
	ExpireSession(metadata.Session) error
}

// wait bounds every blocking step; generous, since CI machines are slow and shared.
const wait = 20 * time.Second

// sessionTTL is long enough that a healthy session never expires during a test.
const sessionTTL = 10 * time.Second

// Run runs the conformance suite. newStore returns a store (possibly a new handle on a shared
// backend); the suite closes it when the subtest ends.
func Run(t *testing.T, newStore func(t *testing.T) metadata.Store) {
	tests := []struct {
		name string
		fn   func(t *testing.T, s metadata.Store, ns string)
	}{
		{"GetMissing", testGetMissing},
		{"PutGet", testPutGet},
		{"PutCAS", testPutCAS},
		{"VersionsNeverRepeat", testVersionsNeverRepeat},
		{"DeleteCAS", testDeleteCAS},
		{"ListPrefixSorted", testList},
		{"ValuesAreCopies", testValuesAreCopies},
		{"ConcurrentCASCounter", testConcurrentCAS},
		{"WatchKey", testWatchKey},
		{"WatchPrefix", testWatchPrefix},
		{"WatchCancel", testWatchCancel},
		{"WatchNoGapUnderWrites", testWatchNoGap},
		{"EphemeralVanishOnClose", testEphemeralClose},
		{"EphemeralPersistentOverride", testEphemeralOverride},
		{"SessionClosedOps", testSessionClosedOps},
		{"ElectionOrder", testElectionOrder},
		{"ElectionSessionClose", testElectionSessionClose},
		{"CampaignCancel", testCampaignCancel},
		{"LeaderKeyDeleted", testLeaderKeyDeleted},
		{"SessionExpiry", testSessionExpiry},
		{"StoreClosed", testStoreClosed},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := newStore(t)
			t.Cleanup(func() { _ = s.Close() })
			tc.fn(t, s, "/storetest/"+strings.ReplaceAll(t.Name(), "/", "_")+"/")
		})
	}
}

func ctxFor(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	t.Cleanup(cancel)
	return ctx
}

func mustPut(t *testing.T, s metadata.Store, key, val string, exp metadata.Version) metadata.Version {
	t.Helper()
	v, err := s.Put(ctxFor(t), key, []byte(val), exp)
	if err != nil {
		t.Fatalf("Put(%s, %d): %v", key, exp, err)
	}
	if v <= 0 {
		t.Fatalf("Put(%s) returned version %d, want > 0", key, v)
	}
	return v
}

func mustGet(t *testing.T, s metadata.Store, key, want string, wantV metadata.Version) {
	t.Helper()
	kv, err := s.Get(ctxFor(t), key)
	if err != nil {
		t.Fatalf("Get(%s): %v", key, err)
	}
	if kv.Key != key || string(kv.Value) != want || (wantV != 0 && kv.Version != wantV) {
		t.Fatalf("Get(%s) = %q %q v%d, want %q v%d", key, kv.Key, kv.Value, kv.Version, want, wantV)
	}
}

func mustMissing(t *testing.T, s metadata.Store, key string) {
	t.Helper()
	if _, err := s.Get(ctxFor(t), key); !errors.Is(err, metadata.ErrNotFound) {
		t.Fatalf("Get(%s) err = %v, want ErrNotFound", key, err)
	}
}

// waitMissing polls until key is gone: session expiry is asynchronous on a real store.
func waitMissing(t *testing.T, s metadata.Store, key string) {
	t.Helper()
	deadline := time.Now().Add(wait)
	for {
		_, err := s.Get(ctxFor(t), key)
		if errors.Is(err, metadata.ErrNotFound) {
			return
		}
		if err != nil {
			t.Fatalf("Get(%s): %v", key, err)
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s still present after %v", key, wait)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func closed(t *testing.T, what string, c <-chan struct{}) {
	t.Helper()
	select {
	case <-c:
	case <-time.After(wait):
		t.Fatalf("%s not closed after %v", what, wait)
	}
}

func notClosed(t *testing.T, what string, c <-chan struct{}) {
	t.Helper()
	select {
	case <-c:
		t.Fatalf("%s closed unexpectedly", what)
	default:
	}
}

func testGetMissing(t *testing.T, s metadata.Store, ns string) {
	mustMissing(t, s, ns+"nope")
	if err := s.Delete(ctxFor(t), ns+"nope", metadata.AnyVersion); !errors.Is(err, metadata.ErrNotFound) {
		t.Fatalf("Delete missing: %v, want ErrNotFound", err)
	}
	if kvs, err := s.List(ctxFor(t), ns); err != nil || len(kvs) != 0 {
		t.Fatalf("List empty = %v, %v", kvs, err)
	}
}

func testPutGet(t *testing.T, s metadata.Store, ns string) {
	v1 := mustPut(t, s, ns+"a", "one", metadata.AnyVersion)
	mustGet(t, s, ns+"a", "one", v1)
	v2 := mustPut(t, s, ns+"a", "two", metadata.AnyVersion)
	if v2 <= v1 {
		t.Fatalf("version went from %d to %d", v1, v2)
	}
	mustGet(t, s, ns+"a", "two", v2)
	// Empty values and keys with unusual bytes are stored as they are.
	mustPut(t, s, ns+"empty", "", metadata.AnyVersion)
	mustGet(t, s, ns+"empty", "", 0)
	odd := ns + "sp ace/ü/\x01"
	mustPut(t, s, odd, "x", metadata.AnyVersion)
	mustGet(t, s, odd, "x", 0)
}

func testPutCAS(t *testing.T, s metadata.Store, ns string) {
	ctx := ctxFor(t)
	k := ns + "k"
	if _, err := s.Put(ctx, k, []byte("x"), 12345); !errors.Is(err, metadata.ErrBadVersion) {
		t.Fatalf("Put absent with version: %v, want ErrBadVersion", err)
	}
	mustMissing(t, s, k)
	v1 := mustPut(t, s, k, "1", metadata.NotExists)
	if _, err := s.Put(ctx, k, []byte("dup"), metadata.NotExists); !errors.Is(err, metadata.ErrBadVersion) {
		t.Fatalf("create existing: %v, want ErrBadVersion", err)
	}
	v2 := mustPut(t, s, k, "2", v1)
	if _, err := s.Put(ctx, k, []byte("stale"), v1); !errors.Is(err, metadata.ErrBadVersion) {
		t.Fatalf("stale CAS: %v, want ErrBadVersion", err)
	}
	mustGet(t, s, k, "2", v2)
}

func testVersionsNeverRepeat(t *testing.T, s metadata.Store, ns string) {
	ctx := ctxFor(t)
	k := ns + "k"
	v1 := mustPut(t, s, k, "a", metadata.NotExists)
	if err := s.Delete(ctx, k, v1); err != nil {
		t.Fatal(err)
	}
	v2 := mustPut(t, s, k, "b", metadata.NotExists)
	if v2 <= v1 {
		t.Fatalf("recreated key has version %d, not above the old %d", v2, v1)
	}
	// A writer that read the first incarnation must not overwrite the second (no ABA).
	if _, err := s.Put(ctx, k, []byte("c"), v1); !errors.Is(err, metadata.ErrBadVersion) {
		t.Fatalf("CAS with version of a deleted incarnation: %v, want ErrBadVersion", err)
	}
}

func testDeleteCAS(t *testing.T, s metadata.Store, ns string) {
	ctx := ctxFor(t)
	k := ns + "k"
	v := mustPut(t, s, k, "x", metadata.AnyVersion)
	if err := s.Delete(ctx, k, v+1000); !errors.Is(err, metadata.ErrBadVersion) {
		t.Fatalf("Delete wrong version: %v, want ErrBadVersion", err)
	}
	if err := s.Delete(ctx, k, v); err != nil {
		t.Fatalf("Delete right version: %v", err)
	}
	mustMissing(t, s, k)
	if err := s.Delete(ctx, k, v); !errors.Is(err, metadata.ErrNotFound) {
		t.Fatalf("Delete again: %v, want ErrNotFound", err)
	}
	mustPut(t, s, k, "y", metadata.AnyVersion)
	if err := s.Delete(ctx, k, metadata.AnyVersion); err != nil {
		t.Fatalf("Delete any: %v", err)
	}
	mustMissing(t, s, k)
}

func testList(t *testing.T, s metadata.Store, ns string) {
	ctx := ctxFor(t)
	want := []string{ns + "d/1", ns + "d/10", ns + "d/2", ns + "d/a/b", ns + "d/z"}
	for i := len(want) - 1; i >= 0; i-- { // written in reverse so sorting is not an accident
		mustPut(t, s, want[i], "v"+want[i], metadata.AnyVersion)
	}
	mustPut(t, s, ns+"d", "parent", metadata.AnyVersion)
	mustPut(t, s, ns+"e/1", "other", metadata.AnyVersion)
	kvs, err := s.List(ctx, ns+"d/")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, kv := range kvs {
		got = append(got, kv.Key)
		if string(kv.Value) != "v"+kv.Key || kv.Version <= 0 {
			t.Errorf("List entry %s = %q v%d", kv.Key, kv.Value, kv.Version)
		}
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("List = %v\nwant  %v", got, want)
	}
	// A big listing, larger than any page size an implementation might use.
	const n = 1200
	for i := range n {
		mustPut(t, s, fmt.Sprintf("%sbig/%05d", ns, i), "", metadata.AnyVersion)
	}
	kvs, err = s.List(ctx, ns+"big/")
	if err != nil || len(kvs) != n {
		t.Fatalf("big List: %d keys, %v", len(kvs), err)
	}
	for i, kv := range kvs {
		if kv.Key != fmt.Sprintf("%sbig/%05d", ns, i) {
			t.Fatalf("big List[%d] = %s", i, kv.Key)
		}
	}
}

func testValuesAreCopies(t *testing.T, s metadata.Store, ns string) {
	val := []byte("abc")
	mustPut(t, s, ns+"k", string(val), metadata.AnyVersion)
	if _, err := s.Put(ctxFor(t), ns+"k2", val, metadata.AnyVersion); err != nil {
		t.Fatal(err)
	}
	val[0] = 'X'
	mustGet(t, s, ns+"k2", "abc", 0)
	kv, _ := s.Get(ctxFor(t), ns+"k2")
	kv.Value[0] = 'Y'
	mustGet(t, s, ns+"k2", "abc", 0)
	// Nor do values received from a watch, initial state or change.
	ch, err := s.Watch(ctxFor(t), ns+"k2", false)
	if err != nil {
		t.Fatal(err)
	}
	next(t, ch).Value[0] = 'Z'
	mustGet(t, s, ns+"k2", "abc", 0)
	mustPut(t, s, ns+"k2", "def", metadata.AnyVersion)
	next(t, ch).Value[0] = 'Z'
	mustGet(t, s, ns+"k2", "def", 0)
}

func testConcurrentCAS(t *testing.T, s metadata.Store, ns string) {
	k := ns + "counter"
	mustPut(t, s, k, "0", metadata.NotExists)
	const workers, each = 4, 10
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for range workers {
		wg.Go(func() {
			ctx := ctxFor(t)
			for done := 0; done < each; {
				kv, err := s.Get(ctx, k)
				if err != nil {
					errs <- err
					return
				}
				n, _ := strconv.Atoi(string(kv.Value))
				_, err = s.Put(ctx, k, []byte(strconv.Itoa(n+1)), kv.Version)
				switch {
				case err == nil:
					done++
				case !errors.Is(err, metadata.ErrBadVersion):
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	mustGet(t, s, k, strconv.Itoa(workers*each), 0)
}

func next(t *testing.T, ch <-chan metadata.Event) metadata.Event {
	t.Helper()
	select {
	case ev, ok := <-ch:
		if !ok {
			t.Fatal("watch channel closed")
		}
		return ev
	case <-time.After(wait):
		t.Fatalf("no watch event after %v", wait)
	}
	return metadata.Event{}
}

func expect(t *testing.T, ch <-chan metadata.Event, typ metadata.EventType, key, val string, ver metadata.Version) {
	t.Helper()
	ev := next(t, ch)
	if ev.Type != typ || ev.Key != key || (typ == metadata.EventPut && string(ev.Value) != val) || (ver != 0 && ev.Version != ver) {
		t.Fatalf("event = %v %s %q v%d, want %v %s %q v%d", ev.Type, ev.Key, ev.Value, ev.Version, typ, key, val, ver)
	}
}

func testWatchKey(t *testing.T, s metadata.Store, ns string) {
	ctx := ctxFor(t)
	k := ns + "k"
	v1 := mustPut(t, s, k, "1", metadata.AnyVersion)
	mustPut(t, s, k+"x", "sibling", metadata.AnyVersion) // not under an exact-key watch
	ch, err := s.Watch(ctx, k, false)
	if err != nil {
		t.Fatal(err)
	}
	expect(t, ch, metadata.EventPut, k, "1", v1)
	mustPut(t, s, k+"x", "sibling2", metadata.AnyVersion)
	v2 := mustPut(t, s, k, "2", metadata.AnyVersion)
	expect(t, ch, metadata.EventPut, k, "2", v2)
	if err := s.Delete(ctx, k, v2); err != nil {
		t.Fatal(err)
	}
	ev := next(t, ch)
	if ev.Type != metadata.EventDelete || ev.Key != k || ev.Value != nil {
		t.Fatalf("delete event = %+v", ev)
	}
	v3 := mustPut(t, s, k, "3", metadata.NotExists)
	expect(t, ch, metadata.EventPut, k, "3", v3)

	// Watching a key that does not exist yet delivers nothing until it is created.
	ch2, err := s.Watch(ctx, ns+"later", false)
	if err != nil {
		t.Fatal(err)
	}
	v4 := mustPut(t, s, ns+"later", "now", metadata.AnyVersion)
	expect(t, ch2, metadata.EventPut, ns+"later", "now", v4)
}

func testWatchPrefix(t *testing.T, s metadata.Store, ns string) {
	ctx := ctxFor(t)
	p := ns + "p/"
	va := mustPut(t, s, p+"a", "A", metadata.AnyVersion)
	vb := mustPut(t, s, p+"b", "B", metadata.AnyVersion)
	mustPut(t, s, ns+"q/a", "elsewhere", metadata.AnyVersion)
	ch, err := s.Watch(ctx, p, true)
	if err != nil {
		t.Fatal(err)
	}
	// Current state first, sorted by key.
	expect(t, ch, metadata.EventPut, p+"a", "A", va)
	expect(t, ch, metadata.EventPut, p+"b", "B", vb)
	// Then every change, in order, none lost, with growing versions.
	const n = 50
	var last metadata.Version
	go func() {
		for i := range n {
			if _, err := s.Put(ctx, fmt.Sprintf("%sc%02d", p, i), []byte{byte(i)}, metadata.AnyVersion); err != nil {
				t.Error(err)
				return
			}
			_, _ = s.Put(ctx, ns+"q/noise", []byte{byte(i)}, metadata.AnyVersion)
		}
		_ = s.Delete(ctx, p+"a", metadata.AnyVersion)
	}()
	for i := range n {
		ev := next(t, ch)
		if ev.Type != metadata.EventPut || ev.Key != fmt.Sprintf("%sc%02d", p, i) || !bytes.Equal(ev.Value, []byte{byte(i)}) {
			t.Fatalf("event %d = %+v", i, ev)
		}
		if ev.Version <= last {
			t.Fatalf("event %d version %d after %d", i, ev.Version, last)
		}
		last = ev.Version
	}
	ev := next(t, ch)
	if ev.Type != metadata.EventDelete || ev.Key != p+"a" || ev.Version <= last {
		t.Fatalf("delete event = %+v", ev)
	}
}

// testWatchNoGap starts watches while a writer keeps counting up one key: from whatever
// current state a watch starts with, it must see every later value exactly once, in order.
// This is the hand-off between the snapshot read and the change stream.
func testWatchNoGap(t *testing.T, s metadata.Store, ns string) {
	ctx := ctxFor(t)
	k := ns + "counter"
	const total = 300
	mustPut(t, s, k, "0", metadata.AnyVersion)
	writerDone := make(chan error, 1)
	go func() {
		for i := 1; i <= total; i++ {
			if _, err := s.Put(ctx, k, []byte(strconv.Itoa(i)), metadata.AnyVersion); err != nil {
				writerDone <- err
				return
			}
		}
		writerDone <- nil
	}()
	for w := 0; w < 3; w++ {
		ch, err := s.Watch(ctx, ns, w%2 == 0) // prefix and exact-key watches alike
		if w%2 == 1 {
			ch, err = s.Watch(ctx, k, false)
		}
		if err != nil {
			t.Fatal(err)
		}
		first := next(t, ch)
		want, _ := strconv.Atoi(string(first.Value))
		for want < total {
			ev := next(t, ch)
			got, _ := strconv.Atoi(string(ev.Value))
			if ev.Key != k || got != want+1 {
				t.Fatalf("watch %d: after %d got %s=%q", w, want, ev.Key, ev.Value)
			}
			want = got
		}
	}
	if err := <-writerDone; err != nil {
		t.Fatal(err)
	}
}

func testWatchCancel(t *testing.T, s metadata.Store, ns string) {
	ctx, cancel := context.WithCancel(ctxFor(t))
	ch, err := s.Watch(ctx, ns, true)
	if err != nil {
		t.Fatal(err)
	}
	cancel()
	deadline := time.After(wait)
	for {
		select {
		case _, ok := <-ch:
			if !ok {
				return
			}
		case <-deadline:
			t.Fatal("watch channel not closed after cancel")
		}
	}
}

func testEphemeralClose(t *testing.T, s metadata.Store, ns string) {
	ctx := ctxFor(t)
	sess, err := s.NewSession(ctx, sessionTTL)
	if err != nil {
		t.Fatal(err)
	}
	k := ns + "eph"
	if _, err := sess.PutEphemeral(ctx, k, []byte("here"), metadata.NotExists); err != nil {
		t.Fatal(err)
	}
	if _, err := sess.PutEphemeral(ctx, k, []byte("again"), metadata.NotExists); !errors.Is(err, metadata.ErrBadVersion) {
		t.Fatalf("second create: %v, want ErrBadVersion", err)
	}
	mustGet(t, s, k, "here", 0)
	mustPut(t, s, ns+"keep", "persistent", metadata.AnyVersion)
	ch, err := s.Watch(ctx, k, false)
	if err != nil {
		t.Fatal(err)
	}
	expect(t, ch, metadata.EventPut, k, "here", 0)
	notClosed(t, "session Done", sess.Done())
	if err := sess.Close(); err != nil {
		t.Fatal(err)
	}
	closed(t, "session Done after Close", sess.Done())
	ev := next(t, ch)
	if ev.Type != metadata.EventDelete || ev.Key != k {
		t.Fatalf("event after session close = %+v", ev)
	}
	mustMissing(t, s, k)
	mustGet(t, s, ns+"keep", "persistent", 0)
}

// A plain Put over an ephemeral key makes it persistent; an ephemeral put of another session
// takes it over. Both follow etcd, where a put replaces the key's lease.
func testEphemeralOverride(t *testing.T, s metadata.Store, ns string) {
	ctx := ctxFor(t)
	s1, err := s.NewSession(ctx, sessionTTL)
	if err != nil {
		t.Fatal(err)
	}
	s2, err := s.NewSession(ctx, sessionTTL)
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	v, err := s1.PutEphemeral(ctx, ns+"p", []byte("eph"), metadata.AnyVersion)
	if err != nil {
		t.Fatal(err)
	}
	mustPut(t, s, ns+"p", "persist", v)
	if _, err := s1.PutEphemeral(ctx, ns+"moved", []byte("s1"), metadata.AnyVersion); err != nil {
		t.Fatal(err)
	}
	if _, err := s2.PutEphemeral(ctx, ns+"moved", []byte("s2"), metadata.AnyVersion); err != nil {
		t.Fatal(err)
	}
	if err := s1.Close(); err != nil {
		t.Fatal(err)
	}
	mustGet(t, s, ns+"p", "persist", 0)
	mustGet(t, s, ns+"moved", "s2", 0)
	if err := s2.Close(); err != nil {
		t.Fatal(err)
	}
	waitMissing(t, s, ns+"moved")
}

func testSessionClosedOps(t *testing.T, s metadata.Store, ns string) {
	ctx := ctxFor(t)
	sess, err := s.NewSession(ctx, sessionTTL)
	if err != nil {
		t.Fatal(err)
	}
	if err := sess.Close(); err != nil {
		t.Fatal(err)
	}
	if err := sess.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if _, err := sess.PutEphemeral(ctx, ns+"x", nil, metadata.AnyVersion); !errors.Is(err, metadata.ErrSessionLost) {
		t.Fatalf("PutEphemeral after Close: %v, want ErrSessionLost", err)
	}
	if _, err := sess.Campaign(ctx, ns+"el", nil); !errors.Is(err, metadata.ErrSessionLost) {
		t.Fatalf("Campaign after Close: %v, want ErrSessionLost", err)
	}
	mustMissing(t, s, ns+"x")
}

type campaignResult struct {
	l   metadata.Leadership
	err error
}

func campaign(ctx context.Context, sess metadata.Session, el, val string) <-chan campaignResult {
	ch := make(chan campaignResult, 1)
	go func() {
		l, err := sess.Campaign(ctx, el, []byte(val))
		ch <- campaignResult{l, err}
	}()
	return ch
}

func won(t *testing.T, ch <-chan campaignResult) metadata.Leadership {
	t.Helper()
	select {
	case r := <-ch:
		if r.err != nil {
			t.Fatalf("Campaign: %v", r.err)
		}
		return r.l
	case <-time.After(wait):
		t.Fatalf("Campaign not won after %v", wait)
	}
	return nil
}

// pending checks that a campaign has not been won, after giving it a moment to (wrongly) win.
func pending(t *testing.T, ch <-chan campaignResult) {
	t.Helper()
	select {
	case r := <-ch:
		t.Fatalf("Campaign returned while another leads: %v %v", r.l, r.err)
	case <-time.After(100 * time.Millisecond):
	}
}

func sessions(t *testing.T, s metadata.Store, n int) []metadata.Session {
	t.Helper()
	out := make([]metadata.Session, n)
	for i := range out {
		sess, err := s.NewSession(ctxFor(t), sessionTTL)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = sess.Close() })
		out[i] = sess
	}
	return out
}

func testElectionOrder(t *testing.T, s metadata.Store, ns string) {
	ctx := ctxFor(t)
	ss := sessions(t, s, 3)
	el := ns + "leader"
	l1 := won(t, campaign(ctx, ss[0], el, "one"))
	c2 := campaign(ctx, ss[1], el, "two")
	pending(t, c2)
	c3 := campaign(ctx, ss[2], el, "three")
	pending(t, c3)
	expectLeader(t, s, el, "one")
	// Every candidacy is an ephemeral key under the election.
	if kvs, err := s.List(ctx, el+"/"); err != nil || len(kvs) != 3 {
		t.Fatalf("List of candidacies = %d keys, %v; want 3", len(kvs), err)
	}
	notClosed(t, "leadership Done", l1.Done())
	if err := l1.Resign(ctx); err != nil {
		t.Fatal(err)
	}
	closed(t, "resigned leadership Done", l1.Done())
	l2 := won(t, c2)
	pending(t, c3)
	expectLeader(t, s, el, "two")
	if err := l2.Resign(ctx); err != nil {
		t.Fatal(err)
	}
	l3 := won(t, c3)
	if err := l3.Resign(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := metadata.Leader(ctx, s, el); !errors.Is(err, metadata.ErrNotFound) && !errors.Is(err, metadata.ErrNotSupported) {
		t.Fatalf("Leader of an empty election: %v, want ErrNotFound", err)
	}
	// Another election with the same sessions is independent.
	l := won(t, campaign(ctx, ss[1], ns+"other", "x"))
	if err := l.Resign(ctx); err != nil {
		t.Fatal(err)
	}
}

// expectLeader checks metadata.Leader when the store supports it.
func expectLeader(t *testing.T, s metadata.Store, el, want string) {
	t.Helper()
	kv, err := metadata.Leader(ctxFor(t), s, el)
	if errors.Is(err, metadata.ErrNotSupported) {
		return
	}
	if err != nil || string(kv.Value) != want || !strings.HasPrefix(kv.Key, el+"/") {
		t.Fatalf("Leader(%s) = %s %q, %v; want value %q", el, kv.Key, kv.Value, err, want)
	}
}

func testElectionSessionClose(t *testing.T, s metadata.Store, ns string) {
	ctx := ctxFor(t)
	ss := sessions(t, s, 2)
	el := ns + "leader"
	l1 := won(t, campaign(ctx, ss[0], el, "one"))
	c2 := campaign(ctx, ss[1], el, "two")
	pending(t, c2)
	if err := ss[0].Close(); err != nil {
		t.Fatal(err)
	}
	closed(t, "leadership Done after session Close", l1.Done())
	l2 := won(t, c2)
	if err := l2.Resign(ctx); err != nil {
		t.Fatal(err)
	}
}

func testCampaignCancel(t *testing.T, s metadata.Store, ns string) {
	ctx := ctxFor(t)
	ss := sessions(t, s, 3)
	el := ns + "leader"
	l1 := won(t, campaign(ctx, ss[0], el, "one"))
	cctx, cancel := context.WithCancel(ctx)
	c2 := campaign(cctx, ss[1], el, "two")
	pending(t, c2)
	c3 := campaign(ctx, ss[2], el, "three")
	pending(t, c3)
	cancel()
	select {
	case r := <-c2:
		if r.err == nil {
			t.Fatal("cancelled Campaign won")
		}
	case <-time.After(wait):
		t.Fatal("cancelled Campaign did not return")
	}
	if err := l1.Resign(ctx); err != nil {
		t.Fatal(err)
	}
	// The withdrawn candidate is skipped.
	l3 := won(t, c3)
	if err := l3.Resign(ctx); err != nil {
		t.Fatal(err)
	}
}

// Deleting the leader's candidacy key (an operator's fix, or a bug elsewhere) ends its
// leadership: Done fires and the next candidate leads.
func testLeaderKeyDeleted(t *testing.T, s metadata.Store, ns string) {
	ctx := ctxFor(t)
	ss := sessions(t, s, 2)
	el := ns + "leader"
	l1 := won(t, campaign(ctx, ss[0], el, "one"))
	c2 := campaign(ctx, ss[1], el, "two")
	pending(t, c2)
	kv, err := metadata.Leader(ctx, s, el)
	if errors.Is(err, metadata.ErrNotSupported) {
		t.Skipf("%T cannot read election leaders", s)
	}
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Delete(ctx, kv.Key, kv.Version); err != nil {
		t.Fatal(err)
	}
	closed(t, "leadership Done after its key was deleted", l1.Done())
	l2 := won(t, c2)
	expectLeader(t, s, el, "two")
	if err := l2.Resign(ctx); err != nil {
		t.Fatal(err)
	}
	if err := l1.Resign(ctx); err != nil {
		t.Fatalf("Resign of a lost leadership: %v", err)
	}
}

func testSessionExpiry(t *testing.T, s metadata.Store, ns string) {
	ex, ok := s.(Expirer)
	if !ok {
		t.Skipf("%T cannot simulate session expiry", s)
	}
	ctx := ctxFor(t)
	ss := sessions(t, s, 2)
	k := ns + "eph"
	if _, err := ss[0].PutEphemeral(ctx, k, []byte("x"), metadata.NotExists); err != nil {
		t.Fatal(err)
	}
	l1 := won(t, campaign(ctx, ss[0], ns+"leader", "one"))
	c2 := campaign(ctx, ss[1], ns+"leader", "two")
	pending(t, c2)
	if err := ex.ExpireSession(ss[0]); err != nil {
		t.Fatal(err)
	}
	closed(t, "expired session Done", ss[0].Done())
	closed(t, "expired session's leadership Done", l1.Done())
	waitMissing(t, s, k)
	won(t, c2)
	expectLeader(t, s, ns+"leader", "two")
	if _, err := ss[0].PutEphemeral(ctx, k, []byte("y"), metadata.AnyVersion); !errors.Is(err, metadata.ErrSessionLost) {
		t.Fatalf("PutEphemeral on expired session: %v, want ErrSessionLost", err)
	}
	mustMissing(t, s, k)
}

func testStoreClosed(t *testing.T, s metadata.Store, ns string) {
	ctx := ctxFor(t)
	sess, err := s.NewSession(ctx, sessionTTL)
	if err != nil {
		t.Fatal(err)
	}
	ch, err := s.Watch(ctx, ns, true)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	closed(t, "session Done after store Close", sess.Done())
	deadline := time.After(wait)
	for open := true; open; {
		select {
		case _, open = <-ch:
		case <-deadline:
			t.Fatal("watch not closed after store Close")
		}
	}
	if _, err := s.Get(ctx, ns+"x"); !errors.Is(err, metadata.ErrClosed) {
		t.Fatalf("Get after Close: %v, want ErrClosed", err)
	}
	if _, err := s.Put(ctx, ns+"x", nil, metadata.AnyVersion); !errors.Is(err, metadata.ErrClosed) {
		t.Fatalf("Put after Close: %v, want ErrClosed", err)
	}
	if _, err := s.NewSession(ctx, sessionTTL); !errors.Is(err, metadata.ErrClosed) {
		t.Fatalf("NewSession after Close: %v, want ErrClosed", err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
}
