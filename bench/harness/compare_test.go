package harness

import (
	"context"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The issue 10 spelling (-peer nats) is a compare run against NATS alone, with the old
// variant names.
func TestPeerNatsAlias(t *testing.T) {
	c := DefaultConfig()
	c.Peer = "nats"
	c.Workloads = []string{"W6"}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	specs := Expand(c)
	if len(specs) != 1 || specs[0].Name != "W6-1KiB-D1-halfmax" || specs[0].Versus != "nats" {
		t.Fatalf("specs %+v", specs)
	}
	if p := c.activePeers(); len(p) != 1 || p[0] != "nats" {
		t.Fatalf("peers %v", p)
	}
}

func TestPeersFlag(t *testing.T) {
	c := DefaultConfig()
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	f := c.BindFlags(fs)
	if err := fs.Parse([]string{"-peers", "Pulsar,kafka", "-scale-topics", "10,20"}); err != nil {
		t.Fatal(err)
	}
	if err := f.Finish(); err != nil {
		t.Fatal(err)
	}
	if strings.Join(c.Peers, ",") != "pulsar,kafka" || len(c.ScaleTopics) != 2 || c.ScaleTopics[1] != 20 {
		t.Fatalf("parsed %v %v", c.Peers, c.ScaleTopics)
	}
	for _, bad := range [][]string{{"-peers", "rabbitmq"}, {"-scale-subs", "ten"}, {"-scale-producers", "0"}, {"-pulsar-heap", "lots"}} {
		c := DefaultConfig()
		fs := flag.NewFlagSet("t", flag.ContinueOnError)
		f := c.BindFlags(fs)
		if err := fs.Parse(bad); err != nil {
			t.Fatal(err)
		}
		if err := f.Finish(); err == nil || !strings.Contains(err.Error(), strings.TrimPrefix(bad[0], "-")) {
			t.Errorf("%v: got %v", bad, err)
		}
	}
}

// Each scaling workload becomes one variant per point, varying only its dimension.
func TestExpandSweeps(t *testing.T) {
	c := DefaultConfig()
	c.Workloads = []string{"S1", "S2", "S3"}
	var names []string
	for _, s := range Expand(c) {
		names = append(names, s.Name)
		switch s.Workload {
		case "S1":
			if s.Partitions != s.Point || s.Producers != 4 || s.Rate != c.ScaleRate || !s.NoBatching {
				t.Errorf("%s: %+v", s.Name, s)
			}
		case "S2":
			if s.Subs != s.Point || s.Partitions != 1 || s.Rate != c.ScaleFanoutRate {
				t.Errorf("%s: %+v", s.Name, s)
			}
		case "S3":
			if s.Producers != s.Point || s.Partitions != 16 || s.Rate != c.ScaleRate {
				t.Errorf("%s: %+v", s.Name, s)
			}
		}
		if s.MaxRate() || s.Sweep == "" {
			t.Errorf("%s is not a fixed-rate sweep point", s.Name)
		}
	}
	want := "S1-topics1000-D1-10000/s,S1-topics10000-D1-10000/s,S1-topics50000-D1-10000/s," +
		"S2-subs1-D1-1000/s,S2-subs10-D1-1000/s,S2-subs100-D1-1000/s," +
		"S3-producers10-D1-10000/s,S3-producers1000-D1-10000/s,S3-producers10000-D1-10000/s"
	if got := strings.Join(names, ","); got != want {
		t.Fatalf("specs %s\nwant %s", got, want)
	}
}

func TestAssign(t *testing.T) {
	if got := assign(16, 4, 1); len(got) != 4 || got[0] != 1 || got[3] != 13 {
		t.Fatalf("16 over 4: %v", got)
	}
	// More producers than topics: several producers per topic, every topic covered.
	seen := map[int]int{}
	for i := 0; i < 40; i++ {
		got := assign(16, 40, i)
		if len(got) != 1 {
			t.Fatalf("producer %d: %v", i, got)
		}
		seen[got[0]]++
	}
	if len(seen) != 16 {
		t.Fatalf("topics covered: %v", seen)
	}
}

func TestSystemsFor(t *testing.T) {
	c := DefaultConfig()
	all := []System{&namedSystem{"magnetar"}, &namedSystem{"nats"}, &namedSystem{"nats-atomic"}, &namedSystem{"kafka"}, &namedSystem{"pulsar"}}
	names := func(spec Spec) string {
		var out []string
		for _, s := range systemsFor(spec, all, c) {
			out = append(out, s.Name())
		}
		return strings.Join(out, ",")
	}
	if got := names(Spec{Durability: D1, Partitions: 1}); got != "magnetar,nats,nats-atomic,kafka,pulsar" {
		t.Fatalf("D1 max: %s", got)
	}
	if got := names(Spec{Durability: D2, Partitions: 1}); got != "magnetar,nats,kafka,pulsar" {
		t.Fatalf("D2 max: %s", got)
	}
	if got := names(Spec{Durability: D1, Partitions: 1, RateHalf: true, Versus: "pulsar"}); got != "magnetar,pulsar" {
		t.Fatalf("half of pulsar's max: %s", got)
	}
}

// namedSystem is a System that is never started.
type namedSystem struct{ name string }

func (n *namedSystem) Name() string { return n.name }
func (n *namedSystem) Start(context.Context, Durability, string) (*Instance, error) {
	return nil, nil
}

func TestBendNote(t *testing.T) {
	pts := []scalePoint{{x: 1000, rss: 100, ok: true}, {x: 10000, rss: 110, ok: true}, {x: 50000, rss: 900, ok: true}}
	got := bendNote(pts, func(p scalePoint) float64 { return p.rss })
	if !strings.Contains(got, "bends at 10000") {
		t.Fatalf("bend: %q", got)
	}
	flat := []scalePoint{{x: 10, rss: 100, ok: true}, {x: 100, rss: 120, ok: true}, {x: 1000, rss: 140, ok: true}}
	if got := bendNote(flat, func(p scalePoint) float64 { return p.rss }); got != "" {
		t.Fatalf("flat curve: %q", got)
	}
	failed := []scalePoint{{x: 10, rss: 100, ok: true}, {x: 100, ok: false}}
	if got := bendNote(failed, func(p scalePoint) float64 { return p.rss }); got != "fails at 100" {
		t.Fatalf("failure: %q", got)
	}
}

// A compare run's report carries the targets against every peer, the durability of every
// row, the startup ratios and the scaling tables and plots.
func TestCompareReport(t *testing.T) {
	c := DefaultConfig()
	c.Workloads = []string{"W1", "S1"}
	c.Durabilities = []string{"D1"}
	c.ScaleTopics = []int{10, 100, 1000}
	dir := t.TempDir()
	c.OutPNG = filepath.Join(dir, "bc.png")
	res := &Results{Config: c, Specs: Expand(c), Env: Env{Peers: map[string]string{"pulsar": "Apache Pulsar 4.2.4", "kafka": "Apache Kafka 4.1.1", "nats": "nats-server"}}}
	add := func(spec, sys string, pair int, rate, p99 float64, rss int64, ready float64) {
		res.Blocks = append(res.Blocks, Block{Spec: spec, System: sys, Pair: pair, MsgPerS: rate, PubP99: p99, PubP50: p99 / 2,
			ServerHWMBytes: rss, ReadyMs: ready})
	}
	for pair := 0; pair < 2; pair++ {
		add("W1-100B-D1-max", "magnetar", pair, 300000, 5000, 100<<20, 50)
		add("W1-100B-D1-max", "pulsar", pair, 100000, 9000, 1500<<20, 15000)
		add("W1-100B-D1-max", "kafka", pair, 400000, 4000, 900<<20, 5000)
		add("W1-100B-D1-max", "nats", pair, 20000, 9000, 50<<20, 20)
		for i, n := range []int{10, 100, 1000} {
			spec := Expand(Config{Workloads: []string{"S1"}, Durabilities: []string{"D1"}, ScaleTopics: []int{n}, ScaleRate: c.ScaleRate, Measure: c.Measure})[0].Name
			add(spec, "magnetar", pair, 10000, float64(1000*(i+1)), int64(60+10*i)<<20, 50)
			add(spec, "pulsar", pair, 10000, 3000, []int64{700, 800, 8000}[i]<<20, 15000)
		}
	}
	if err := Render(res, filepath.Join(dir, "bc.md"), c.OutPNG); err != nil {
		t.Fatal(err)
	}
	md, err := os.ReadFile(filepath.Join(dir, "bc.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"# Magnetar vs NATS JetStream, Apache Kafka and Apache Pulsar",
		"| throughput >= Apache Pulsar, every max-rate row | W1-100B-D1-max: r=3.00 [3.00,3.00] met",
		"| D1 throughput >= Apache Kafka D1 | W1-100B-D1-max: r=0.75 [0.75,0.75] missed",
		"| resident memory <= 0.5x Apache Kafka | W1-100B-D1-max: r=0.11",
		"startup to ready vs pulsar (reported, no target) | r=0.003",
		"fsync per appended batch (log.flush.interval.messages=1)",
		"journal fsync per group (journalSyncData=true)",
		"### topics",
		"bends at 100",
		"bc-topics.png",
	} {
		if !strings.Contains(string(md), want) {
			t.Errorf("report lacks %q", want)
		}
	}
	for _, png := range []string{"bc.png", "bc-topics.png"} {
		if st, err := os.Stat(filepath.Join(dir, png)); err != nil || st.Size() == 0 {
			t.Errorf("plot %s: %v", png, err)
		}
	}
}
