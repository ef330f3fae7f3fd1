package ownership

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/magnetar-io/magnetar/internal/metadata"
	"github.com/magnetar-io/magnetar/internal/resources"
)

func TestScoreIsTheTightestResource(t *testing.T) {
	c := DefaultScoreConfig()
	for _, tc := range []struct {
		name string
		r    *LoadReport
		want float64
	}{
		{"no report", nil, 0},
		{"cpu", &LoadReport{CPUPercent: 40, MemoryMB: 409.6}, 40},
		{"memory", &LoadReport{CPUPercent: 5, MemoryMB: 2048}, 50},
		{"bandwidth", &LoadReport{LoadStats: LoadStats{BytesIn: 50 << 20, BytesOut: 50 << 20}}, 80},
		{"msg rate", &LoadReport{LoadStats: LoadStats{MsgRateIn: 100_000, MsgRateOut: 50_000}}, 75},
	} {
		if got := c.Score(tc.r); got < tc.want-1e-9 || got > tc.want+1e-9 {
			t.Errorf("%s: score %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestCandidateOrder(t *testing.T) {
	c := DefaultScoreConfig()
	idleMany := candidate{score: 3, bundles: 5}
	idleFew := candidate{score: 9, bundles: 1}
	busyNone := candidate{score: 60, bundles: 0}
	if !c.less(idleFew, idleMany) {
		t.Error("within one band, fewer bundles must win over a slightly lower score")
	}
	if !c.less(idleMany, busyNone) {
		t.Error("a lower band must win over fewer bundles")
	}
	if !c.less(candidate{score: 2, bundles: 1}, candidate{score: 4, bundles: 1}) {
		t.Error("same band and bundles: lower score first")
	}
}

// lmCluster is managers whose AskLeader calls the leader's Assign directly (no HTTP), with
// load reports published by hand (the report loop is slowed to never run).
type lmCluster struct {
	mu    sync.Mutex
	byURL map[string]*Manager
	asked atomic.Int32
	down  atomic.Bool // the leader does not answer
}

func (c *lmCluster) ask(ctx context.Context, leaderURL string, b resources.Bundle) (BrokerInfo, error) {
	c.asked.Add(1)
	if c.down.Load() {
		return BrokerInfo{}, errors.New("connection refused")
	}
	c.mu.Lock()
	m := c.byURL[leaderURL]
	c.mu.Unlock()
	if m == nil {
		return BrokerInfo{}, errors.New("no such broker")
	}
	s := b.String()
	i := strings.LastIndexByte(s, '/')
	return m.Assign(ctx, s[:i], s[i+1:])
}

func (c *lmCluster) start(t *testing.T, st metadata.Store, res *resources.Resources, host string, o Options) *Manager {
	t.Helper()
	o.Store, o.Resources = st, res
	o.BrokerURL, o.HTTPURL = "pulsar://"+host+":6650", "http://"+host+":8080"
	o.TTL, o.LoadReportInterval, o.Probe, o.AskLeader = time.Second, time.Hour, probe, c.ask
	m, err := Start(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Register(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = m.Release(context.Background()) })
	c.mu.Lock()
	if c.byURL == nil {
		c.byURL = map[string]*Manager{}
	}
	c.byURL[o.HTTPURL] = m
	c.mu.Unlock()
	return m
}

func waitLeader(t *testing.T, m *Manager, url string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for l, _ := m.Leader(context.Background()); l != url; l, _ = m.Leader(context.Background()) {
		if time.Now().After(deadline) {
			t.Fatalf("leader %q, want %q", l, url)
		}
		time.Sleep(10 * time.Millisecond)
	}
	for {
		m.mu.Lock()
		ok := m.leader != nil
		m.mu.Unlock()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("leader never noticed its leadership")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func setLoad(t *testing.T, m *Manager, r LoadReport) {
	t.Helper()
	if err := m.publishReport(context.Background(), &r); err != nil {
		t.Fatal(err)
	}
}

// topicsPerBundle returns one topic name for each of the namespace's bundles.
func topicsPerBundle(t *testing.T, m *Manager, n int) map[resources.Bundle]string {
	t.Helper()
	out := map[resources.Bundle]string{}
	for i := 0; len(out) < n; i++ {
		topic := "persistent://public/default/lm" + strings.Repeat("y", i)
		b := mustBundle(t, m, topic)
		if _, ok := out[b]; !ok {
			out[b] = topic
		}
	}
	return out
}

// TestLeaderAssignsFreeBundlesToTheLeastLoadedBroker: lookups of free bundles arrive at a
// loaded non-leader; it asks the leader (also loaded), which sends every bundle to the idle
// broker; that broker takes them on the authoritative lookup that follows.
func TestLeaderAssignsFreeBundlesToTheLeastLoadedBroker(t *testing.T) {
	st, res := setup(t)
	ctx := context.Background()
	var c lmCluster
	lead := c.start(t, st, res, "lead", Options{})
	waitLeader(t, lead, "http://lead:8080")
	busy := c.start(t, st, res, "busy", Options{})
	idle := c.start(t, st, res, "idle", Options{})
	setLoad(t, lead, LoadReport{CPUPercent: 70})
	setLoad(t, busy, LoadReport{LoadStats: LoadStats{MsgRateIn: 150_000}}) // 75% of the message rate budget
	setLoad(t, idle, LoadReport{CPUPercent: 5})
	waitLive(t, lead, 3)

	for b, topic := range topicsPerBundle(t, busy, 4) {
		r, err := busy.Lookup(ctx, topic, false)
		if err != nil {
			t.Fatal(err)
		}
		if r.Self || !r.Authoritative || r.BrokerURL != "pulsar://idle:6650" {
			t.Fatalf("lookup of %s at the busy broker: %+v, want an authoritative redirect to idle", b, r)
		}
		r, err = idle.Lookup(ctx, topic, true)
		if err != nil || !r.Self {
			t.Fatalf("authoritative lookup at idle: %+v, %v", r, err)
		}
	}
	if got := c.asked.Load(); got != 4 {
		t.Fatalf("leader asked %d times, want 4", got)
	}
	if n := len(idle.OwnedBundles()); n != 4 {
		t.Fatalf("idle holds %v, want all 4 bundles", idle.OwnedBundles())
	}
}

// TestAssignmentWithoutALeaderFallsBackToTheLocalChoice: the leader does not answer; the
// lookup still completes, choosing by the same rule locally.
func TestAssignmentWithoutALeaderFallsBackToTheLocalChoice(t *testing.T) {
	st, res := setup(t)
	ctx := context.Background()
	var c lmCluster
	lead := c.start(t, st, res, "lead", Options{})
	waitLeader(t, lead, "http://lead:8080")
	other := c.start(t, st, res, "other", Options{})
	setLoad(t, lead, LoadReport{CPUPercent: 5})
	setLoad(t, other, LoadReport{CPUPercent: 95})
	waitLive(t, lead, 2)
	c.down.Store(true)
	for _, topic := range topicsPerBundle(t, other, 2) {
		r, err := other.Lookup(ctx, topic, false)
		if err != nil {
			t.Fatal(err)
		}
		if r.Self || r.BrokerURL != "pulsar://lead:6650" {
			t.Fatalf("local choice %+v, want a redirect to the less loaded lead", r)
		}
	}
	if c.asked.Load() == 0 {
		t.Fatal("the leader was never asked")
	}
}

// TestAssignRefusedByANonLeader: only the leader decides.
func TestAssignRefusedByANonLeader(t *testing.T) {
	st, res := setup(t)
	var c lmCluster
	lead := c.start(t, st, res, "lead", Options{})
	waitLeader(t, lead, "http://lead:8080")
	other := c.start(t, st, res, "other", Options{})
	b := mustBundle(t, other, "persistent://public/default/x")
	s := b.String()
	i := strings.LastIndexByte(s, '/')
	if _, err := other.Assign(context.Background(), s[:i], s[i+1:]); !errors.Is(err, ErrNotOwner) {
		t.Fatalf("non-leader Assign: %v, want ErrNotOwner", err)
	}
	if bi, err := lead.Assign(context.Background(), s[:i], s[i+1:]); err != nil || bi.PulsarServiceURL == "" {
		t.Fatalf("leader Assign: %+v, %v", bi, err)
	}
}

func brokerWithLoad(name string, r *LoadReport) BrokerInfo {
	return BrokerInfo{PulsarServiceURL: "pulsar://" + name + ":6650", WebServiceURL: "http://" + name + ":8080", Instance: name, Load: r}
}

func TestPlanSheddingByLoad(t *testing.T) {
	sc := ShedConfig{ThresholdPercent: 10}.withDefaults()
	score := DefaultScoreConfig()
	owners := map[string]OwnerData{}
	own := func(inst string, bundles ...string) {
		for _, b := range bundles {
			owners[b] = OwnerData{Instance: inst}
		}
	}
	own("hot", "ns/b1", "ns/b2", "ns/b3", "ns/b4")
	own("cold", "ns/b5", "ns/b6", "ns/b7", "ns/b8")
	hot := &LoadReport{CPUPercent: 80, BundleStats: map[string]BundleStats{
		"ns/b1": {MsgRate: 100}, "ns/b2": {MsgRate: 5000}, "ns/b3": {MsgRate: 3000}, "ns/b4": {MsgRate: 1900},
	}}
	live := map[string]BrokerInfo{"hot": brokerWithLoad("hot", hot), "cold": brokerWithLoad("cold", &LoadReport{CPUPercent: 10})}

	// avg 45, hot 80: shed (80-45-10+5)% = 30% of 10000 msg/s: b2 alone (5000) is enough.
	from, bundles, why := planShedding(sc, score, live, owners, nil)
	if from.Instance != "hot" || why != "load" || len(bundles) != 1 || bundles[0] != "ns/b2" {
		t.Fatalf("plan: from %q %v (%s), want ns/b2 from hot by load", from.Instance, bundles, why)
	}
	// b2 in its grace period: the next busiest ones until 3000 msg/s move.
	_, bundles, _ = planShedding(sc, score, live, owners, map[string]time.Time{"ns/b2": time.Now()})
	if len(bundles) != 1 || bundles[0] != "ns/b3" {
		t.Fatalf("plan with b2 in grace: %v, want [ns/b3]", bundles)
	}
	// Far over on a broker of two equally busy bundles: one moves, one stays.
	two := &LoadReport{CPUPercent: 100, BundleStats: map[string]BundleStats{"ns/b1": {MsgRate: 100}, "ns/b2": {MsgRate: 100}}}
	liveFar := map[string]BrokerInfo{"hot": brokerWithLoad("hot", two), "c1": brokerWithLoad("c1", nil), "c2": brokerWithLoad("c2", nil)}
	ownersFar := map[string]OwnerData{"ns/b1": {Instance: "hot"}, "ns/b2": {Instance: "hot"}}
	if _, bundles, _ = planShedding(sc, score, liveFar, ownersFar, nil); len(bundles) != 1 {
		t.Fatalf("plan far over: %v, want one of two bundles", bundles)
	}
	// Within the threshold: nothing by load, and counts are even.
	hot.CPUPercent = 15
	live["cold"] = brokerWithLoad("cold", &LoadReport{CPUPercent: 10})
	if _, bundles, why := planShedding(sc, score, live, owners, nil); len(bundles) != 0 {
		t.Fatalf("plan under threshold: %v (%s), want none", bundles, why)
	}
}

func TestPlanSheddingByCount(t *testing.T) {
	sc := ShedConfig{}.withDefaults()
	owners := map[string]OwnerData{"ns/a": {Instance: "x"}, "ns/b": {Instance: "x"}, "ns/c": {Instance: "x"}}
	live := map[string]BrokerInfo{"x": brokerWithLoad("x", nil), "y": brokerWithLoad("y", nil)}
	from, bundles, why := planShedding(sc, DefaultScoreConfig(), live, owners, nil)
	if from.Instance != "x" || why != "count" || len(bundles) != 1 || bundles[0] != "ns/c" {
		t.Fatalf("plan: from %q %v (%s), want ns/c from x by count", from.Instance, bundles, why)
	}
	if _, bundles, _ := planShedding(sc, DefaultScoreConfig(), live, owners, map[string]time.Time{"ns/a": {}, "ns/b": {}, "ns/c": {}}); len(bundles) != 0 {
		t.Fatalf("every bundle in grace, yet plan %v", bundles)
	}
}

func TestSplitLimitsOnRates(t *testing.T) {
	lim := SplitLimits{MaxTopics: 10, MaxSessions: 10, MaxMsgRate: 30_000, MaxBandwidthMB: 100}
	for _, tc := range []struct {
		st   BundleStats
		want string
	}{
		{BundleStats{Topics: 3, Sessions: 3, MsgRate: 1000, Bandwidth: 1 << 20}, ""},
		{BundleStats{Topics: 11}, "topics"},
		{BundleStats{Sessions: 11}, "sessions"},
		{BundleStats{MsgRate: 30_001}, "message rate"},
		{BundleStats{Bandwidth: 101 << 20}, "bandwidth"},
	} {
		if got := lim.overLimits(tc.st); got != tc.want {
			t.Errorf("%+v: over %q, want %q", tc.st, got, tc.want)
		}
	}
	if got := (SplitLimits{}).overLimits(BundleStats{Topics: 1 << 20, MsgRate: 1e9}); got != "" {
		t.Errorf("zero limits split on %q", got)
	}
}

// rateLister is a broker whose topics' running totals the test advances.
type rateLister struct {
	fakeUnloader
	mu     sync.Mutex
	totals map[string]int64
}

func (l *rateLister) LoadedTopicLoads() []TopicLoad {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []TopicLoad
	for topic, n := range l.totals {
		out = append(out, TopicLoad{Topic: topic, Sessions: 1, MsgsTotal: n, BytesTotal: n * 1024})
	}
	return out
}

// TestBundleStatsRates: rates are the totals' increase over the sample interval, per bundle.
func TestBundleStatsRates(t *testing.T) {
	st, res := setup(t)
	var c lmCluster
	m := c.start(t, st, res, "solo", Options{})
	topics := topicsPerBundle(t, m, 2)
	var names []string
	for _, topic := range topics {
		if err := m.Acquire(context.Background(), topic); err != nil {
			t.Fatal(err)
		}
		names = append(names, topic)
	}
	l := &rateLister{totals: map[string]int64{names[0]: 100, names[1]: 0}}
	m.SetUnloader(l)
	prev := bundleSample{}
	first := m.sampleBundles(context.Background(), &prev)
	if len(first) != 2 {
		t.Fatalf("first sample %v, want two bundles", first)
	}
	prev.at = prev.at.Add(-2 * time.Second) // pretend two seconds passed
	l.mu.Lock()
	l.totals[names[0]] += 2000
	l.mu.Unlock()
	got := m.sampleBundles(context.Background(), &prev)
	b0, b1 := mustBundle(t, m, names[0]).String(), mustBundle(t, m, names[1]).String()
	if r := got[b0].MsgRate; r < 900 || r > 1000 {
		t.Fatalf("busy bundle rate %v, want about 1000 msg/s", r)
	}
	if got[b0].Bandwidth < 900*1024 || got[b1].MsgRate != 0 || got[b0].Topics != 1 || got[b0].Sessions != 1 {
		t.Fatalf("stats %+v", got)
	}
}

// TestAskLeaderOverHTTP: the default AskLeader reaches the leader's assign route over real
// HTTP on loopback, and a broker that does not lead answers 503 (the asker falls back).
func TestAskLeaderOverHTTP(t *testing.T) {
	st, res := setup(t)
	ctx := context.Background()
	var leadM, otherM atomic.Pointer[Manager]
	srv := func(p *atomic.Pointer[Manager]) *httptest.Server {
		s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			p.Load().Handler(http.NotFoundHandler()).ServeHTTP(w, r)
		}))
		t.Cleanup(s.Close)
		return s
	}
	ls, ots := srv(&leadM), srv(&otherM)
	start := func(p *atomic.Pointer[Manager], s *httptest.Server, name string) *Manager {
		m, err := Start(ctx, Options{Store: st, Resources: res, BrokerURL: "pulsar://" + name + ":6650", HTTPURL: s.URL,
			TTL: time.Second, LoadReportInterval: time.Hour, Probe: probe})
		if err != nil {
			t.Fatal(err)
		}
		p.Store(m)
		if err := m.Register(ctx, nil); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = m.Release(ctx) })
		return m
	}
	lead := start(&leadM, ls, "lead")
	waitLeader(t, lead, ls.URL)
	other := start(&otherM, ots, "other")
	setLoad(t, lead, LoadReport{CPUPercent: 90})
	setLoad(t, other, LoadReport{CPUPercent: 1})
	waitLive(t, lead, 2)
	b := mustBundle(t, other, "persistent://public/default/http")
	bi, err := other.askLeaderHTTP(ctx, ls.URL, b)
	if err != nil || bi.PulsarServiceURL != "pulsar://other:6650" {
		t.Fatalf("leader over HTTP: %+v, %v; want other", bi, err)
	}
	if _, err := lead.askLeaderHTTP(ctx, ots.URL, b); !errors.Is(err, ErrNoBroker) {
		t.Fatalf("asking a non-leader: %v, want ErrNoBroker (HTTP 503)", err)
	}
}
