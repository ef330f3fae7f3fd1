package harness

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Sentinel errors of the harness.
var (
	ErrConfig      = errors.New("harness: invalid config")
	ErrUnavailable = errors.New("harness: system not available")
)

// Config is everything one run needs. Flags map 1:1 onto fields (BindFlags).
type Config struct {
	// Workloads lists workload IDs (W1..W10) to run, in order.
	Workloads []string
	// Durabilities restricts the durability modes run (D1, D2); a workload runs only the
	// modes it defines that are also listed here.
	Durabilities []string
	Warmup       time.Duration
	Measure      time.Duration
	// Pairs is the number of A/B pairs per workload variant; blocks run A B, B A, A B, ...
	Pairs int
	// Window is the number of unacknowledged messages each producer may have in flight.
	Window int
	// AtomicBatch is the NATS atomic batch size used by the "nats-atomic" peer in D1
	// max-rate workloads; 0 disables that peer.
	AtomicBatch int
	// Rates are the W3 open-loop rates (msg/s); "half" means half the NATS max rate measured
	// earlier in the same run for the same size and durability.
	Rates []string
	// BacklogBytes is the W7 backlog size.
	BacklogBytes int64
	// CatchupRate is the publish rate (msg/s) kept up while W7 drains its backlog.
	CatchupRate float64
	// DropCaches writes /proc/sys/vm/drop_caches before W7 reads (needs root).
	DropCaches bool

	RepoDir  string // repository root (for bin/magnetar and git SHA)
	WorkDir  string // data directories and logs; same disk for both systems
	CacheDir string // nats-server binary cache, outside the repository
	OutMD    string // markdown report
	OutPNG   string // latency-vs-throughput plot
	OutJSON  string // raw results
	Command  string // the command line, recorded in the report

	// Peer is the kind of run: "compare" (issues 10 and 25: Magnetar over the Pulsar
	// protocol next to every system in Peers), "nats" (the same with Peers = nats only, the
	// issue 10 spelling), "kafka" (issue 19: Apache Kafka, with Magnetar over its Kafka
	// listener and over the Pulsar protocol, kafka.go) or "magnetar" (an A/B of two builds:
	// PeerBin, reported as magnetar-before, against MagnetarBin, with the same arguments).
	Peer    string
	PeerBin string // the other magnetar binary of a -peer magnetar run (relative to RepoDir)
	// Peers are the systems of a compare run: nats (NATS JetStream, plus nats-atomic in
	// the D1 single-partition max-rate rows), kafka (Apache Kafka, franz-go) and pulsar
	// (Apache Pulsar standalone, pulsar-client-go).
	Peers []string
	// KafkaHeap is Apache Kafka's -Xms and -Xmx (kafka-server-start.sh's 1G by default).
	KafkaHeap string
	// PulsarHeap and PulsarDirectMemory are Apache Pulsar's -Xms/-Xmx and
	// -XX:MaxDirectMemorySize (conf/pulsar_env.sh's 2g and 4g by default).
	PulsarHeap, PulsarDirectMemory string
	// JVMWarmup is the least warm-up a JVM peer gets, whatever Warmup says: a short run's
	// 2 s would measure the interpreter and C1, not the code a running broker executes.
	JVMWarmup time.Duration
	// JVMReadyTimeout replaces ReadyTimeout for the JVM peers (Pulsar standalone starts a
	// bookie, a RocksDB metadata store and the broker: 15-60 s on this machine).
	JVMReadyTimeout time.Duration
	// Scale sweeps (workloads S1-S3): topics at ScaleRate msg/s in total, subscriptions
	// per topic at ScaleFanoutRate msg/s published, producer connections at ScaleRate.
	ScaleTopics, ScaleSubs, ScaleProducers []int
	ScaleRate, ScaleFanoutRate             float64

	NATSVersion        string
	NATSPort           int
	MagnetarBin        string
	MagnetarBaseArgs   string   // space-separated port arguments after `standalone`
	MagnetarArgs       []string // extra arguments after those
	MagnetarURL        string   // pulsar:// service URL the standalone listens on
	MagnetarHTTP       string   // admin HTTP base URL (readiness via /status.html when set)
	MagnetarNoSyncFlag string   // flag that turns journal fsync off (D2)
	MagnetarPprof      string   // base URL serving /debug/pprof; "" = no profiles
	Note               string   // free-form machine/build note for the report
	ReadyTimeout       time.Duration
	GoMaxProcs         int
}

// DefaultConfig is the short run of `make bench-compare` (about 6-9 minutes here).
func DefaultConfig() Config {
	home, _ := os.UserHomeDir()
	return Config{
		Workloads:    []string{"W1", "W2", "W3", "W4", "W7"},
		Durabilities: []string{"D1", "D2"},
		Warmup:       2 * time.Second,
		Measure:      6 * time.Second,
		Pairs:        2,
		Window:       1000,
		AtomicBatch:  100,
		Rates:        []string{"1000", "half"},
		BacklogBytes: 128 << 20,
		CatchupRate:  2000,
		DropCaches:   true,
		RepoDir:      ".",
		WorkDir:      "",
		CacheDir:     filepath.Join(home, ".cache", "magnetar-bench"),
		OutMD:        "docs/bench-compare.md",
		OutPNG:       "docs/bench-compare.png",
		OutJSON:      "",
		NATSVersion:  "v2.15.2",
		Peer:         "compare",
		Peers:        []string{"nats", "kafka", "pulsar"},
		KafkaHeap:    "1g",
		PulsarHeap:   "2g",
		// pulsar_env.sh's 4g lets Pulsar's caches (a fifth of it for the managed ledger
		// cache, a quarter each for the bookie's write and read-ahead caches) grow past
		// what a 2-core machine shared with the load generator should give one JVM.
		PulsarDirectMemory: "2g",
		JVMWarmup:          10 * time.Second,
		JVMReadyTimeout:    3 * time.Minute,
		ScaleTopics:        []int{1000, 10000, 50000},
		ScaleSubs:          []int{1, 10, 100},
		ScaleProducers:     []int{10, 1000, 10000},
		ScaleRate:          10000,
		ScaleFanoutRate:    1000,
		NATSPort:           0,
		MagnetarBin:        "bin/magnetar",
		// Fresh free ports per start ({name} placeholders, see expandPorts), so the harness
		// never measures someone else's server on a well-known port.
		MagnetarBaseArgs: "--port {port} --http-port {http} --metadata-listen http://127.0.0.1:{etcd} " +
			"--metadata-peer http://127.0.0.1:{peer} --bookie-address 127.0.0.1:{bookie}",
		MagnetarURL:        "pulsar://127.0.0.1:{port}",
		MagnetarHTTP:       "http://127.0.0.1:{http}",
		MagnetarNoSyncFlag: "--journal-sync-data=false",
		ReadyTimeout:       60 * time.Second,
		GoMaxProcs:         2,
	}
}

// BindFlags registers every field on fs; call Finish after fs.Parse.
func (c *Config) BindFlags(fs *flag.FlagSet) *FlagSet {
	f := &FlagSet{cfg: c}
	f.workloads = strings.Join(c.Workloads, ",")
	f.durs = strings.Join(c.Durabilities, ",")
	f.rates = strings.Join(c.Rates, ",")
	f.backlog = FormatBytes(c.BacklogBytes)
	f.peers = strings.Join(c.Peers, ",")
	f.scaleTopics, f.scaleSubs, f.scaleProducers = joinInts(c.ScaleTopics), joinInts(c.ScaleSubs), joinInts(c.ScaleProducers)
	fs.StringVar(&f.workloads, "workloads", f.workloads, "comma-separated workload IDs (W1,W2,W3,W4,W5,W6,W7,W8,W9,W10)")
	fs.StringVar(&f.durs, "durability", f.durs, "durability modes to run: D1 (fsync before ack), D2 (no fsync)")
	fs.DurationVar(&c.Warmup, "warmup", c.Warmup, "warm-up per block (discarded)")
	fs.DurationVar(&c.Measure, "measure", c.Measure, "measurement window per block")
	fs.IntVar(&c.Pairs, "pairs", c.Pairs, "A/B pairs per workload variant (blocks run A B B A ...)")
	fs.IntVar(&c.Window, "window", c.Window, "unacknowledged messages in flight per producer (both systems)")
	fs.IntVar(&c.AtomicBatch, "atomic-batch", c.AtomicBatch, "NATS atomic batch size for the nats-atomic peer (0 = off)")
	fs.StringVar(&f.rates, "rates", f.rates, "W3 open-loop rates in msg/s; 'half' = half the NATS max of the same run")
	fs.StringVar(&f.backlog, "backlog", f.backlog, "W7 backlog size (e.g. 128MiB, 4GiB)")
	fs.Float64Var(&c.CatchupRate, "catchup-rate", c.CatchupRate, "W7 publish rate (msg/s) while the backlog drains")
	fs.BoolVar(&c.DropCaches, "drop-caches", c.DropCaches, "drop the page cache before W7 reads (needs root)")
	fs.StringVar(&c.RepoDir, "repo", c.RepoDir, "repository root")
	fs.StringVar(&c.WorkDir, "workdir", c.WorkDir, "data dirs, logs and results.json (default <repo>/bench/results)")
	fs.StringVar(&c.CacheDir, "cache", c.CacheDir, "cache for the nats-server binary (outside the repository)")
	fs.StringVar(&c.OutMD, "out", c.OutMD, "markdown report path (relative to -repo)")
	fs.StringVar(&c.OutPNG, "png", c.OutPNG, "plot path (relative to -repo)")
	fs.StringVar(&c.OutJSON, "json", c.OutJSON, "raw results JSON path (default <workdir>/results.json)")
	fs.StringVar(&c.Peer, "peer", c.Peer, "kind of run: compare (Magnetar next to every system in -peers), nats (= compare -peers nats), kafka (Apache Kafka; Magnetar over its Kafka and Pulsar protocols), or magnetar (an A/B of -magnetar-bin against -peer-bin)")
	fs.StringVar(&c.PeerBin, "peer-bin", c.PeerBin, "with -peer magnetar: the other magnetar binary, reported as magnetar-before (relative to -repo)")
	fs.StringVar(&f.peers, "peers", f.peers, "systems of a compare run: nats, kafka, pulsar")
	fs.StringVar(&c.KafkaHeap, "kafka-heap", c.KafkaHeap, "Apache Kafka's JVM heap (-Xms and -Xmx)")
	fs.StringVar(&c.PulsarHeap, "pulsar-heap", c.PulsarHeap, "Apache Pulsar's JVM heap (-Xms and -Xmx)")
	fs.StringVar(&c.PulsarDirectMemory, "pulsar-direct-memory", c.PulsarDirectMemory, "Apache Pulsar's -XX:MaxDirectMemorySize")
	fs.DurationVar(&c.JVMWarmup, "jvm-warmup", c.JVMWarmup, "least warm-up of a JVM peer's blocks (the JIT compiles the hot paths first)")
	fs.DurationVar(&c.JVMReadyTimeout, "jvm-ready-timeout", c.JVMReadyTimeout, "max wait for a JVM peer to become ready")
	fs.StringVar(&f.scaleTopics, "scale-topics", f.scaleTopics, "S1: topic counts, at -scale-rate msg/s in total")
	fs.StringVar(&f.scaleSubs, "scale-subs", f.scaleSubs, "S2: subscriptions per topic, one topic at -scale-fanout-rate msg/s")
	fs.StringVar(&f.scaleProducers, "scale-producers", f.scaleProducers, "S3: producer connections, at -scale-rate msg/s in total")
	fs.Float64Var(&c.ScaleRate, "scale-rate", c.ScaleRate, "S1 and S3 total publish rate (msg/s)")
	fs.Float64Var(&c.ScaleFanoutRate, "scale-fanout-rate", c.ScaleFanoutRate, "S2 publish rate (msg/s)")
	fs.StringVar(&c.NATSVersion, "nats-version", c.NATSVersion, "nats-server version installed from the Go module proxy")
	fs.IntVar(&c.NATSPort, "nats-port", c.NATSPort, "NATS client port on 127.0.0.1 (0: a free port per start)")
	fs.StringVar(&c.MagnetarBin, "magnetar-bin", c.MagnetarBin, "magnetar binary (relative to -repo)")
	fs.StringVar(&c.MagnetarBaseArgs, "magnetar-base-args", c.MagnetarBaseArgs, "port arguments for `magnetar standalone` (space-separated; {port} {http} {etcd} {peer} {bookie} become free ports per start)")
	fs.StringVar(&c.Note, "note", c.Note, "free-form note for the report (e.g. which branch the magnetar binary was built from)")
	fs.Func("magnetar-arg", "extra argument for `magnetar standalone` (repeatable)", func(s string) error {
		c.MagnetarArgs = append(c.MagnetarArgs, s)
		return nil
	})
	fs.StringVar(&c.MagnetarURL, "magnetar-url", c.MagnetarURL, "Pulsar service URL of the standalone")
	fs.StringVar(&c.MagnetarHTTP, "magnetar-http", c.MagnetarHTTP, "admin HTTP base URL; when set, readiness also waits for /status.html")
	fs.StringVar(&c.MagnetarNoSyncFlag, "magnetar-nosync-flag", c.MagnetarNoSyncFlag, "standalone flag that turns journal fsync off (D2)")
	fs.StringVar(&c.MagnetarPprof, "magnetar-pprof", c.MagnetarPprof, "base URL serving /debug/pprof on the standalone (e.g. http://127.0.0.1:{http}); when set, a CPU profile is taken in the first pair of every Magnetar steady-state block")
	fs.DurationVar(&c.ReadyTimeout, "ready-timeout", c.ReadyTimeout, "max wait for a server to become ready")
	fs.IntVar(&c.GoMaxProcs, "gomaxprocs", c.GoMaxProcs, "GOMAXPROCS for both servers")
	fs.StringVar(&c.Command, "command", c.Command, "command line recorded in the report (default: this invocation)")
	return f
}

// FlagSet holds the string forms of list flags until Finish parses them.
type FlagSet struct {
	cfg                                    *Config
	workloads, durs, rates, backlog, peers string
	scaleTopics, scaleSubs, scaleProducers string
}

// Finish parses the list flags into the config and validates it.
func (f *FlagSet) Finish() error {
	c := f.cfg
	c.Workloads = splitList(strings.ToUpper(f.workloads))
	c.Durabilities = splitList(strings.ToUpper(f.durs))
	c.Rates = splitList(strings.ToLower(f.rates))
	n, err := ParseBytes(f.backlog)
	if err != nil {
		return fmt.Errorf("%w: backlog: %w", ErrConfig, err)
	}
	c.BacklogBytes = n
	c.Peers = splitList(strings.ToLower(f.peers))
	for _, l := range []struct {
		name string
		s    string
		dst  *[]int
	}{{"scale-topics", f.scaleTopics, &c.ScaleTopics}, {"scale-subs", f.scaleSubs, &c.ScaleSubs}, {"scale-producers", f.scaleProducers, &c.ScaleProducers}} {
		v, err := parseInts(l.s)
		if err != nil {
			return fmt.Errorf("%w: %s: %w", ErrConfig, l.name, err)
		}
		*l.dst = v
	}
	return c.Validate()
}

func joinInts(v []int) string {
	s := make([]string, len(v))
	for i, n := range v {
		s[i] = strconv.Itoa(n)
	}
	return strings.Join(s, ",")
}

func parseInts(s string) ([]int, error) {
	var out []int
	for _, p := range splitList(s) {
		n, err := strconv.Atoi(p)
		if err != nil {
			return nil, fmt.Errorf("%q is not a whole number", p)
		}
		out = append(out, n)
	}
	return out, nil
}

func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// Validate checks bounds and names; errors name the flag.
func (c *Config) Validate() error {
	var errs []error
	bad := func(format string, a ...any) {
		errs = append(errs, fmt.Errorf("%w: "+format, append([]any{ErrConfig}, a...)...))
	}
	if len(c.Workloads) == 0 {
		bad("workloads: empty")
	}
	for _, w := range c.Workloads {
		if _, ok := catalogue[w]; !ok {
			bad("workloads: unknown %q", w)
		}
	}
	for _, d := range c.Durabilities {
		if d != "D1" && d != "D2" {
			bad("durability: %q is not D1 or D2", d)
		}
	}
	if c.Warmup < 0 {
		bad("warmup: must be >= 0")
	}
	if c.Measure < time.Second {
		bad("measure: must be >= 1s")
	}
	if c.Pairs < 1 || c.Pairs > 50 {
		bad("pairs: must be in [1,50]")
	}
	if c.Window < 1 || c.Window > 1_000_000 {
		bad("window: must be in [1,1000000]")
	}
	if c.AtomicBatch < 0 || c.AtomicBatch > 1000 {
		bad("atomic-batch: must be in [0,1000] (NATS limit)")
	}
	if c.AtomicBatch > c.Window {
		bad("atomic-batch: %d exceeds window %d", c.AtomicBatch, c.Window)
	}
	for _, r := range c.Rates {
		if r == "half" {
			continue
		}
		if v, err := strconv.ParseFloat(r, 64); err != nil || v <= 0 {
			bad("rates: %q is neither a positive number nor 'half'", r)
		}
	}
	if c.BacklogBytes < 1<<20 {
		bad("backlog: must be >= 1MiB")
	}
	if c.CatchupRate < 0 {
		bad("catchup-rate: must be >= 0")
	}
	if c.NATSPort < 0 || c.NATSPort > 65535 {
		bad("nats-port: out of range")
	}
	if !slices.Contains([]string{"compare", "nats", "kafka", "magnetar"}, c.Peer) {
		bad("peer: %q is not compare, nats, kafka or magnetar", c.Peer)
	}
	if c.Peer == "compare" && len(c.Peers) == 0 {
		bad("peers: empty")
	}
	for _, p := range c.Peers {
		if !slices.Contains(comparePeers, p) {
			bad("peers: %q is not nats, kafka or pulsar", p)
		}
	}
	for _, l := range []struct {
		name string
		v    []int
		max  int
	}{{"scale-topics", c.ScaleTopics, 200_000}, {"scale-subs", c.ScaleSubs, 1000}, {"scale-producers", c.ScaleProducers, 50_000}} {
		for _, n := range l.v {
			if n < 1 || n > l.max {
				bad("%s: %d is not in [1,%d]", l.name, n, l.max)
			}
		}
	}
	if c.ScaleRate <= 0 || c.ScaleFanoutRate <= 0 {
		bad("scale-rate, scale-fanout-rate: must be > 0")
	}
	for _, h := range []struct{ name, v string }{{"kafka-heap", c.KafkaHeap}, {"pulsar-heap", c.PulsarHeap}, {"pulsar-direct-memory", c.PulsarDirectMemory}} {
		if !jvmSize.MatchString(h.v) {
			bad("%s: %q is not a JVM size such as 512m or 2g", h.name, h.v)
		}
	}
	if c.JVMWarmup < 0 || c.JVMReadyTimeout <= 0 {
		bad("jvm-warmup, jvm-ready-timeout: must be >= 0 and > 0")
	}
	if (c.Peer == "magnetar") != (c.PeerBin != "") {
		bad("peer-bin: set it exactly when -peer is magnetar")
	}
	if c.ReadyTimeout <= 0 {
		bad("ready-timeout: must be > 0")
	}
	if c.GoMaxProcs < 1 {
		bad("gomaxprocs: must be >= 1")
	}
	return errors.Join(errs...)
}

// comparePeers are the systems -peers may name.
var comparePeers = []string{"nats", "kafka", "pulsar"}

// jvmSize is what -Xmx and friends accept.
var jvmSize = regexp.MustCompile(`^[0-9]+[kKmMgG]?$`)

// activePeers are the peer systems of a compare run (nil in the other kinds of run).
func (c *Config) activePeers() []string {
	switch c.Peer {
	case "compare":
		return c.Peers
	case "nats", "":
		return []string{"nats"} // "" is a results.json from before Peer existed
	}
	return nil
}

// halfPeers are the systems whose max rate the half-rate workloads take (one variant per
// system): the peers of a compare run, Apache Kafka, or the other build.
func (c *Config) halfPeers() []string {
	switch c.Peer {
	case "kafka":
		return []string{"kafka"}
	case "magnetar":
		return []string{magnetarBefore}
	}
	return c.activePeers()
}

// ParseBytes reads sizes such as 100, 100B, 1KiB, 1KB (=1024), 128MiB, 4GiB.
func ParseBytes(s string) (int64, error) {
	t := strings.TrimSpace(strings.ToUpper(s))
	mult := int64(1)
	for _, u := range []struct {
		suffix string
		m      int64
	}{{"GIB", 1 << 30}, {"MIB", 1 << 20}, {"KIB", 1 << 10}, {"GB", 1 << 30}, {"MB", 1 << 20}, {"KB", 1 << 10}, {"G", 1 << 30}, {"M", 1 << 20}, {"K", 1 << 10}, {"B", 1}} {
		if strings.HasSuffix(t, u.suffix) {
			t, mult = strings.TrimSuffix(t, u.suffix), u.m
			break
		}
	}
	n, err := strconv.ParseInt(strings.TrimSpace(t), 10, 64)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("%w: size %q", ErrConfig, s)
	}
	return n * mult, nil
}

// FormatBytes is the inverse of ParseBytes for exact binary multiples.
func FormatBytes(n int64) string {
	switch {
	case n >= 1<<30 && n%(1<<30) == 0:
		return fmt.Sprintf("%dGiB", n>>30)
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%dMiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%dKiB", n>>10)
	}
	return fmt.Sprintf("%dB", n)
}
