package ownership

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/magnetar-io/magnetar/internal/metadata"
	"github.com/magnetar-io/magnetar/internal/metadata/memstore"
	"github.com/magnetar-io/magnetar/internal/resources"
)

// fakeUnloader records which topics the manager asked to unload.
type fakeUnloader struct {
	mu     sync.Mutex
	loaded []string
	calls  int
}

func (f *fakeUnloader) UnloadTopics(_ context.Context, match func(string) bool) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls++
	keep := f.loaded[:0]
	for _, t := range f.loaded {
		if !match(t) {
			keep = append(keep, t)
		}
	}
	f.loaded = keep
	return nil
}

func setup(t *testing.T) (*memstore.Store, *resources.Resources) {
	t.Helper()
	st := memstore.New(memstore.Options{})
	res := resources.New(st)
	if err := res.EnsureDefaults(context.Background(), "c"); err != nil {
		t.Fatal(err)
	}
	return st, res
}

// down lists the fake hosts whose probe fails.
var down sync.Map

func probe(_ context.Context, hostPort string) error {
	if _, ok := down.Load(hostPort); ok {
		return errors.New("connection refused")
	}
	return nil
}

func startManager(t *testing.T, st metadata.Store, res *resources.Resources, host string) *Manager {
	t.Helper()
	m, err := Start(context.Background(), Options{Store: st, Resources: res, BrokerURL: "pulsar://" + host + ":6650",
		HTTPURL: "http://" + host + ":8080", TTL: time.Second, LoadReportInterval: 50 * time.Millisecond, Probe: probe})
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Register(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = m.Release(context.Background()) })
	return m
}

func TestBundlesOfNewNamespace(t *testing.T) {
	_, res := setup(t)
	p, err := res.Namespace(context.Background(), "public", "default")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"0x00000000", "0x40000000", "0x80000000", "0xc0000000", "0xffffffff"}
	if p.Bundles == nil || strings.Join(p.Bundles.Boundaries, ",") != strings.Join(want, ",") || p.Bundles.NumBundles != 4 {
		t.Fatalf("bundles %+v, want Pulsar's 4 default boundaries %v", p.Bundles, want)
	}
	b, _ := resources.ParseBoundaries(want)
	for _, c := range []struct {
		h    uint32
		want string
	}{{0, "0x00000000_0x40000000"}, {0x3fffffff, "0x00000000_0x40000000"}, {0x40000000, "0x40000000_0x80000000"},
		{0xfffffffe, "0xc0000000_0xffffffff"}, {0xffffffff, "0xc0000000_0xffffffff"}} {
		if got := resources.FindBundle("public/default", b, c.h).Range(); got != c.want {
			t.Errorf("hash %#x in %s, want %s", c.h, got, c.want)
		}
	}
}

func TestOneOwnerAndRedirect(t *testing.T) {
	st, res := setup(t)
	a := startManager(t, st, res, "a")
	b := startManager(t, st, res, "b")
	ctx := context.Background()
	topic := "persistent://public/default/x"
	if err := a.Acquire(ctx, topic); err != nil {
		t.Fatal(err)
	}
	r, err := b.Lookup(ctx, topic, false)
	if err != nil || r.Self || r.BrokerURL != "pulsar://a:6650" || !r.Authoritative {
		t.Fatalf("lookup on b: %+v %v, want redirect to a", r, err)
	}
	if err := b.Acquire(ctx, topic); !errors.Is(err, ErrNotOwner) {
		t.Fatalf("acquire on b: %v, want ErrNotOwner", err)
	}
	// Free bundles go to the broker with fewer bundles: b, which owns none.
	other := ""
	for _, name := range []string{"y", "z", "w", "v", "u", "q"} {
		tb, _ := a.BundleOf(ctx, "persistent://public/default/"+name)
		if tb != mustBundle(t, a, topic) {
			other = "persistent://public/default/" + name
			break
		}
	}
	r, err = a.Lookup(ctx, other, false)
	if err != nil || r.Self || r.BrokerURL != "pulsar://b:6650" {
		t.Fatalf("lookup of a free bundle on a: %+v %v, want redirect to the less loaded b", r, err)
	}
	if r, err = b.Lookup(ctx, other, true); err != nil || !r.Self {
		t.Fatalf("authoritative lookup on b: %+v %v", r, err)
	}
}

func mustBundle(t *testing.T, m *Manager, topic string) resources.Bundle {
	t.Helper()
	b, err := m.BundleOf(context.Background(), topic)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// ownedByA starts managers a and b on st and res; a owns topic's bundle with topic loaded
// in u.
func ownedByA(t *testing.T, st *memstore.Store, res *resources.Resources) (a, b *Manager, u *fakeUnloader, topic string) {
	t.Helper()
	a = startManager(t, st, res, "a")
	b = startManager(t, st, res, "b")
	topic = "persistent://public/default/x"
	u = &fakeUnloader{loaded: []string{topic}}
	a.SetUnloader(u)
	if err := a.Acquire(context.Background(), topic); err != nil {
		t.Fatal(err)
	}
	return a, b, u, topic
}

func TestSessionLossUnloadsAndFreesBundles(t *testing.T) {
	st, res := setup(t)
	a, b, u, topic := ownedByA(t, st, res)
	ctx := context.Background()
	a.mu.Lock()
	sess := a.sess
	a.mu.Unlock()
	if err := st.ExpireSession(sess); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		u.mu.Lock()
		gone := len(u.loaded) == 0
		u.mu.Unlock()
		if gone && !a.Owned(mustBundle(t, a, topic)) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("topics not unloaded after the session was lost")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := b.Acquire(ctx, topic); err != nil {
		t.Fatalf("b taking the lost bundle: %v", err)
	}
	// a re-registers with its new session and is redirected to b.
	if r, err := a.Lookup(ctx, topic, false); err != nil || r.Self || r.BrokerURL != "pulsar://b:6650" {
		t.Fatalf("lookup on a after loss: %+v %v", r, err)
	}
	waitLive(t, a, 2)
}

// TestLookupWaitsOutADeadOwner: an owner that refuses connections still holds its key until
// its lease expires; a lookup elsewhere waits for that and takes the bundle instead of
// redirecting the client to a dead broker.
func TestLookupWaitsOutADeadOwner(t *testing.T) {
	st, res := setup(t)
	a := startManager(t, st, res, "dead")
	b := startManager(t, st, res, "alive")
	ctx := context.Background()
	topic := "persistent://public/default/x"
	if err := a.Acquire(ctx, topic); err != nil {
		t.Fatal(err)
	}
	down.Store("dead:6650", true)
	a.mu.Lock()
	sess := a.sess
	a.mu.Unlock()
	a.mu.Lock()
	a.closing = true // a "dies": it must not take anything back once its session ends
	a.mu.Unlock()
	go func() {
		time.Sleep(300 * time.Millisecond)
		_ = st.ExpireSession(sess)
	}()
	r, err := b.Lookup(ctx, topic, false)
	close(a.stop) // end a's background loops (Release returns early on a closing manager)
	if err != nil || !r.Self {
		t.Fatalf("lookup on alive: %+v %v, want it to take the dead owner's bundle", r, err)
	}
}

func waitLive(t *testing.T, m *Manager, n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		live, err := m.LiveBrokers(context.Background())
		if err == nil && len(live) == n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("live brokers %v (%v), want %d", live, err, n)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestReleaseHandsBundlesOver(t *testing.T) {
	st, res := setup(t)
	a, b, u, topic := ownedByA(t, st, res)
	ctx := context.Background()
	if err := a.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if u.calls == 0 || len(u.loaded) != 0 {
		t.Fatalf("release did not unload topics: %+v", u)
	}
	if owners, _ := b.Owners(ctx); len(owners) != 0 {
		t.Fatalf("owners after release: %v", owners)
	}
	waitLive(t, b, 1)
	if r, err := b.Lookup(ctx, topic, false); err != nil || !r.Self {
		t.Fatalf("lookup on b after a released: %+v %v", r, err)
	}
	// A released broker sends even authoritative lookups of free bundles elsewhere.
	if r, err := a.Lookup(ctx, "persistent://public/default/zz", true); err != nil || r.Self || r.BrokerURL != "pulsar://b:6650" {
		t.Fatalf("lookup on a released broker: %+v %v, want redirect to b", r, err)
	}
}

func TestHTTPRedirectsToOwner(t *testing.T) {
	st, res := setup(t)
	a := startManager(t, st, res, "a")
	b := startManager(t, st, res, "b")
	ctx := context.Background()
	topic := "persistent://public/default/x"
	if err := a.Acquire(ctx, topic); err != nil {
		t.Fatal(err)
	}
	next := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(299) })
	h := b.Handler(next)
	for _, c := range []struct {
		method, path string
		want         int
	}{
		{"GET", "/admin/v2/persistent/public/default/x/stats", http.StatusTemporaryRedirect},
		{"GET", "/lookup/v2/topic/persistent/public/default/x", http.StatusTemporaryRedirect},
		{"GET", "/admin/v2/persistent/public/default/x/partitions", 299},
		{"PUT", "/admin/v2/persistent/public/default/x", 299},
		{"GET", "/admin/v2/clusters", 299},
		{"GET", "/admin/v2/persistent/public/default/partitioned", 299},
		{"GET", "/admin/v2/persistent/public/default", 299},
	} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(c.method, c.path, nil))
		if rec.Code != c.want {
			t.Errorf("%s %s: %d, want %d", c.method, c.path, rec.Code, c.want)
		}
		if c.want == http.StatusTemporaryRedirect && !strings.HasPrefix(rec.Header().Get("Location"), "http://a:8080"+c.path) {
			t.Errorf("%s: Location %q", c.path, rec.Header().Get("Location"))
		}
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/admin/v2/namespaces/public/default/bundles", nil))
	if rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), `"numBundles":4`) {
		t.Errorf("bundles: %d %s", rec.Code, rec.Body.String())
	}
	// Unloading the namespace through b releases a's bundle (a is reached directly: it is
	// this process).
	rec = httptest.NewRecorder()
	a.Handler(next).ServeHTTP(rec, httptest.NewRequest("PUT", "/admin/v2/namespaces/public/default/unload", nil))
	if rec.Code != http.StatusNoContent || len(a.OwnedBundles()) != 0 {
		t.Errorf("namespace unload: %d %s, a still holds %v", rec.Code, rec.Body.String(), a.OwnedBundles())
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("GET", "/admin/v2/brokers/leaderBroker", nil))
		if rec.Code == http.StatusOK && strings.Contains(rec.Body.String(), "brokerId") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("leaderBroker: %d %s", rec.Code, rec.Body.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func FuzzParseBoundaries(f *testing.F) {
	f.Add("0x00000000,0x40000000,0x80000000,0xc0000000,0xffffffff")
	f.Add("0x00000000,0xffffffff")
	f.Add("0x1,0x0")
	f.Add("zz")
	f.Fuzz(func(t *testing.T, s string) {
		b, err := resources.ParseBoundaries(strings.Split(s, ","))
		if err != nil {
			return
		}
		if b[0] != 0 || b[len(b)-1] != 0xffffffff {
			t.Fatalf("accepted %v", b)
		}
		for i := 1; i < len(b); i++ {
			if b[i] <= b[i-1] {
				t.Fatalf("not increasing: %v", b)
			}
			bd := resources.FindBundle("t/n", b, b[i-1])
			if !bd.Contains(b[i-1]) {
				t.Fatalf("bundle %v does not contain its lower bound", bd)
			}
		}
	})
}

// TestLeaderShedsBundlesToTheLessLoadedBroker: the leader holds all four bundles; it unloads
// them one at a time while the other broker has two fewer, and lookups (clients coming back)
// assign each freed bundle to the less loaded broker, until both hold two.
func TestLeaderShedsBundlesToTheLessLoadedBroker(t *testing.T) {
	st, res := setup(t)
	ctx := context.Background()
	a, err := Start(ctx, Options{Store: st, Resources: res, BrokerURL: "pulsar://sa:6650", HTTPURL: "http://sa:8080",
		TTL: time.Second, LoadReportInterval: 50 * time.Millisecond, ShedInterval: 50 * time.Millisecond, Probe: probe})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = a.Release(ctx) })
	if err := a.Register(ctx, nil); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for l, _ := a.Leader(ctx); l != "http://sa:8080"; l, _ = a.Leader(ctx) {
		if time.Now().After(deadline) {
			t.Fatalf("leader %q", l)
		}
		time.Sleep(10 * time.Millisecond)
	}
	// One topic per bundle, all taken by a while it is alone.
	byBundle := map[resources.Bundle]string{}
	for i := 0; len(byBundle) < 4; i++ {
		topic := "persistent://public/default/t" + strings.Repeat("x", i)
		b, err := a.BundleOf(ctx, topic)
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := byBundle[b]; !ok {
			byBundle[b] = topic
			if err := a.Acquire(ctx, topic); err != nil {
				t.Fatal(err)
			}
		}
	}
	b := startManager(t, st, res, "sb")
	deadline = time.Now().Add(20 * time.Second)
	for {
		// Clients of freed bundles come back through b, which assigns them.
		for bd, topic := range byBundle {
			if !a.Owned(bd) && !b.Owned(bd) {
				if _, err := b.Lookup(ctx, topic, false); err != nil {
					t.Fatal(err)
				}
			}
		}
		if len(a.OwnedBundles()) == 2 && len(b.OwnedBundles()) == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("a holds %v, b holds %v; want two each", a.OwnedBundles(), b.OwnedBundles())
		}
		time.Sleep(20 * time.Millisecond)
	}
	time.Sleep(300 * time.Millisecond) // balanced: nothing more moves
	if len(a.OwnedBundles()) != 2 || len(b.OwnedBundles()) != 2 {
		t.Fatalf("after balance a holds %v, b holds %v", a.OwnedBundles(), b.OwnedBundles())
	}
}

// TestSplitBundle: the owner splits a bundle in two and releases it; a broker still caching
// the old boundaries takes the old bundle's key on its next lookup, finds it split, drops
// the key and takes the right half instead.
func TestSplitBundle(t *testing.T) {
	st, res := setup(t)
	a, b, u, topic := ownedByA(t, st, res)
	ctx := context.Background()
	old := mustBundle(t, b, topic) // b caches the boundaries before the split

	// Through b: the split is redirected to the owner a.
	rec := httptest.NewRecorder()
	b.Handler(http.NotFoundHandler()).ServeHTTP(rec, httptest.NewRequest("PUT", "/admin/v2/namespaces/public/default/"+old.Range()+"/split?unload=true", nil))
	// The redirect keeps the request's options (unload=true here) and says authoritative.
	if loc := rec.Header().Get("Location"); rec.Code != http.StatusTemporaryRedirect || !strings.HasPrefix(loc, "http://a:8080/") ||
		!strings.Contains(loc, "unload=true") || !strings.Contains(loc, "authoritative=true") {
		t.Fatalf("split via b: %d %q", rec.Code, rec.Header().Get("Location"))
	}
	rec = httptest.NewRecorder()
	a.Handler(http.NotFoundHandler()).ServeHTTP(rec, httptest.NewRequest("PUT", "/admin/v2/namespaces/public/default/"+old.Range()+"/split", nil))
	if rec.Code != http.StatusNoContent {
		t.Fatalf("split on a: %d %s", rec.Code, rec.Body.String())
	}
	p, err := res.Namespace(ctx, "public", "default")
	if err != nil || p.Bundles.NumBundles != 5 {
		t.Fatalf("bundles after split: %+v %v", p.Bundles, err)
	}
	if len(u.loaded) != 0 || a.Owned(old) {
		t.Fatalf("split left topics %v loaded / bundle owned", u.loaded)
	}
	if r, err := b.Lookup(ctx, topic, true); err != nil || !r.Self {
		t.Fatalf("lookup on b after the split: %+v %v", r, err)
	}
	owners, _ := b.Owners(ctx)
	if _, ok := owners[old.String()]; ok || len(owners) != 1 {
		t.Fatalf("owners after the split: %v (the old bundle %s must be gone)", owners, old)
	}
	now := mustBundle(t, b, topic)
	mid := old.Lower + (old.Upper-old.Lower)/2
	lower := resources.Bundle{Namespace: old.Namespace, Lower: old.Lower, Upper: mid}
	upper := resources.Bundle{Namespace: old.Namespace, Lower: mid, Upper: old.Upper}
	if (now != lower && now != upper) || !b.Owned(now) {
		t.Fatalf("b owns %v (bundle of the topic now %v, before %v)", b.OwnedBundles(), now, old)
	}
}

// listingUnloader is a fakeUnloader that also lists its topics (ownership.TopicLister).
type listingUnloader struct{ fakeUnloader }

func (l *listingUnloader) LoadedTopicLoads() []TopicLoad {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]TopicLoad, 0, len(l.loaded))
	for _, t := range l.loaded {
		out = append(out, TopicLoad{Topic: t, Sessions: 1})
	}
	return out
}

// TestAutoSplitOfABundleWithTooManyTopics: a held bundle with more loaded topics than
// MaxTopics is split after a load report; MaxBundles stops further splits.
func TestAutoSplitOfABundleWithTooManyTopics(t *testing.T) {
	st, res := setup(t)
	ctx := context.Background()
	m, err := Start(ctx, Options{Store: st, Resources: res, BrokerURL: "pulsar://as:6650", HTTPURL: "http://as:8080",
		TTL: time.Second, LoadReportInterval: 20 * time.Millisecond, Probe: probe,
		Split: SplitLimits{MaxTopics: 2, MaxBundles: 5}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = m.Release(ctx) })
	// Three topics of one bundle.
	var topics []string
	var first resources.Bundle
	for i := 0; len(topics) < 3; i++ {
		topic := "persistent://public/default/s" + strings.Repeat("y", i)
		b, err := m.BundleOf(ctx, topic)
		if err != nil {
			t.Fatal(err)
		}
		if len(topics) == 0 {
			first = b
		}
		if b == first {
			topics = append(topics, topic)
			if err := m.Acquire(ctx, topic); err != nil {
				t.Fatal(err)
			}
		}
	}
	u := &listingUnloader{fakeUnloader{loaded: topics}}
	m.SetUnloader(u)
	if err := m.Register(ctx, nil); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		p, err := res.Namespace(ctx, "public", "default")
		if err == nil && p.Bundles.NumBundles == 5 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("bundles %+v, want the crowded bundle split", p.Bundles)
		}
		time.Sleep(10 * time.Millisecond)
	}
	// The split unloaded the topics; loading them all again in one half must not split
	// beyond MaxBundles.
	time.Sleep(200 * time.Millisecond)
	if p, _ := res.Namespace(ctx, "public", "default"); p.Bundles.NumBundles != 5 {
		t.Fatalf("bundles %+v, want no split beyond 5", p.Bundles)
	}
}

func TestRegistrationCarriesProtocols(t *testing.T) {
	st, res := setup(t)
	m, err := Start(context.Background(), Options{Store: st, Resources: res, BrokerURL: "pulsar://p:6650",
		HTTPURL: "http://p:8080", TTL: time.Second, Probe: probe})
	if err != nil {
		t.Fatal(err)
	}
	m.SetProtocol("kafka", "PLAINTEXT://p:9092")
	if err := m.Register(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = m.Release(context.Background()) })
	live, err := m.LiveBrokers(context.Background())
	if err != nil || live["p:6650"].Protocols["kafka"] != "PLAINTEXT://p:9092" {
		t.Fatalf("live brokers %+v %v", live, err)
	}
}

// A restarted broker that finds its predecessor's key waits for it to go; when another
// broker takes the bundle before the wait starts, the wait must end at once rather than wait
// for the new owner's live key to vanish (the lookup's next round redirects to that owner).
func TestWaitGoneEndsWhenTheKeyIsReplaced(t *testing.T) {
	st, res := setup(t)
	m := startManager(t, st, res, "restarted")
	ctx := context.Background()
	key := "/namespace/public/default/0x00000000_0x40000000"
	old, err := st.Put(ctx, key, []byte(`{"nativeUrl":"pulsar://restarted:6650"}`), metadata.NotExists)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.Put(ctx, key, []byte(`{"nativeUrl":"pulsar://other:6650"}`), old); err != nil {
		t.Fatal(err)
	}
	if err := m.waitGone(ctx, key, old); err != nil {
		t.Fatalf("waitGone on a replaced key: %v, want it to end without error", err)
	}
	cur, err := st.Get(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel()
	if err := m.waitGone(wctx, key, cur.Version); err == nil {
		t.Fatal("waitGone on a live, unchanged key returned nil; want it to keep waiting")
	}
}
