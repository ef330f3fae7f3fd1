package chaos

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/magnetar-io/magnetar/internal/bookie/storage/vfs"
	"github.com/magnetar-io/magnetar/internal/devcluster"
)

// ttl is the brokers' and bookies' metadata session TTL in the harness (failover time).
const ttl = 3 * time.Second

// clusterOpts size a harness cluster.
type clusterOpts struct {
	bookies, brokers int
	e, qw, qa        int
	dedup            bool
	bookieArgs       []string // extra flags for every bookie
}

// chaosCluster is a devcluster whose processes each run in a network namespace of their own.
type chaosCluster struct {
	t   testing.TB
	net *network
	dc  *devcluster.Cluster
	dir string

	lazy bool // bookies record unsynced writes (R7)

	mu     sync.Mutex
	start  time.Time
	faults []faultEvent
}

// faultEvent is one nemesis action in the result.
type faultEvent struct {
	T    float64 `json:"t"` // seconds since the workload began
	F    string  `json:"f"`
	Node string  `json:"node,omitempty"`
}

func startChaosCluster(t testing.TB, o clusterOpts) *chaosCluster {
	t.Helper()
	names := []string{"metadata-1", "metadata-2", "metadata-3"}
	for i := range o.bookies {
		names = append(names, fmt.Sprintf("bookie-%d", i+1))
	}
	for i := range o.brokers {
		names = append(names, fmt.Sprintf("broker-%d", i+1))
	}
	names = append(names, "proxy")
	n := newNetwork(t, names)
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	ms := fmt.Sprint(ttl.Milliseconds())
	dc, err := devcluster.Start(ctx, devcluster.Options{
		Binary: binary, Dir: dir, Metadata: 3, Bookies: o.bookies, Brokers: o.brokers,
		StartTimeout: 2 * time.Minute,
		Node:         func(name string) ([]string, string) { return n.prefix(name), n.ip(name) },
		BookieArgs: append([]string{"--metadata-store-session-timeout-millis", ms, "--test-fault-control", "faults",
			"--bookie-shutdown-timeout-ms", "10000", "--auto-recovery-daemon-enabled=false"}, o.bookieArgs...),
		BrokerArgs: []string{"--metadata-store-session-timeout-millis", ms,
			"--managed-ledger-default-ensemble-size", fmt.Sprint(o.e), "--managed-ledger-default-write-quorum", fmt.Sprint(o.qw),
			"--managed-ledger-default-ack-quorum", fmt.Sprint(o.qa), fmt.Sprintf("--broker-deduplication-enabled=%v", o.dedup),
			"--broker-shutdown-timeout-ms", "10000", "--load-balancer-report-update-min-interval-millis", "1000"},
	})
	if err != nil {
		t.Fatal(err)
	}
	c := &chaosCluster{t: t, net: n, dc: dc, dir: dir, start: time.Now()}
	t.Cleanup(func() {
		dc.Stop(10 * time.Second)
		if t.Failed() {
			if res := os.Getenv("CHAOS_RESULTS"); res != "" {
				// Keep every log and data directory of a failed run for the post-mortem.
				keep := filepath.Join(res, strings.ReplaceAll(t.Name(), "/", "-")+fmt.Sprintf("-%d", time.Now().Unix()))
				_ = exec.Command("cp", "-a", dir, keep).Run()
				t.Logf("logs and data kept in %s", keep)
			}
			for _, p := range c.procs() {
				b, _ := os.ReadFile(p.Log())
				lines := strings.Split(string(b), "\n")
				t.Logf("last lines of %s:\n%s", p.Name, strings.Join(lines[max(0, len(lines)-25):], "\n"))
			}
		}
	})
	return c
}

func (c *chaosCluster) procs() []*devcluster.Proc {
	out := append(append(append([]*devcluster.Proc{}, c.dc.Metadata...), c.dc.Bookies...), c.dc.Brokers...)
	if c.dc.Proxy != nil {
		out = append(out, c.dc.Proxy)
	}
	return out
}

func (c *chaosCluster) record(f, node string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.faults = append(c.faults, faultEvent{T: time.Since(c.start).Seconds(), F: f, Node: node})
	c.t.Logf("nemesis +%.1fs: %s %s", time.Since(c.start).Seconds(), f, node)
}

// kill SIGKILLs p; restart starts it again with the same data and address.
func (c *chaosCluster) kill(p *devcluster.Proc) {
	c.record("kill", p.Name)
	p.Kill()
}

func (c *chaosCluster) restart(p *devcluster.Proc) {
	c.record("start", p.Name)
	if p.Running() {
		return
	}
	if err := p.Start(); err != nil {
		c.t.Fatal(err)
	}
}

func (c *chaosCluster) pause(p *devcluster.Proc) {
	c.record("pause", p.Name)
	_ = p.Signal(syscall.SIGSTOP)
}

func (c *chaosCluster) resume(p *devcluster.Proc) {
	c.record("resume", p.Name)
	_ = p.Signal(syscall.SIGCONT)
}

// clockOffset restarts broker p with its clock shifted by off (--test-clock-offset, the
// clock seam of internal/clock); 0 puts it back on the system clock.
func (c *chaosCluster) clockOffset(p *devcluster.Proc, off time.Duration) {
	c.record("clock offset "+off.String(), p.Name)
	args := make([]string, 0, len(p.Args)+1)
	for _, a := range p.Args {
		if !strings.HasPrefix(a, "--test-clock-offset=") {
			args = append(args, a)
		}
	}
	if off != 0 {
		args = append(args, "--test-clock-offset="+off.String())
	}
	p.Kill()
	p.Args = args
	if err := p.Start(); err != nil {
		c.t.Fatal(err)
	}
}

// diskFault writes the bookie's fault control file ("full", "syncfail" or "").
func (c *chaosCluster) diskFault(b *devcluster.Proc, faults string) {
	c.record("disk "+faults, b.Name)
	if err := os.WriteFile(filepath.Join(c.dir, b.Name, "faults"), []byte(faults), 0o644); err != nil {
		c.t.Fatal(err)
	}
}

// crash SIGKILLs a bookie and drops every write its fault layer saw no fsync for, as a
// machine crash would (needs the "lazy" disk fault on it).
func (c *chaosCluster) crash(b *devcluster.Proc) {
	c.record("crash (kill, unsynced writes lost)", b.Name)
	b.Kill()
	if err := vfs.RevertUnsynced(filepath.Join(c.dir, b.Name, "undo")); err != nil {
		c.t.Fatal(err)
	}
}

// heal ends every fault: network healed, paused processes resumed, dead ones restarted,
// disks healthy; then it waits until every broker serves again.
func (c *chaosCluster) heal() {
	c.record("heal", "")
	c.net.heal()
	for _, p := range c.procs() {
		_ = p.Signal(syscall.SIGCONT)
	}
	for _, b := range c.dc.Bookies {
		if f := filepath.Join(c.dir, b.Name, "faults"); !c.lazy {
			_ = os.WriteFile(f, nil, 0o644)
		} else {
			_ = os.WriteFile(f, []byte("lazy"), 0o644)
		}
	}
	for _, p := range c.procs() {
		if !p.Running() {
			if err := p.Start(); err != nil {
				c.t.Fatal(err)
			}
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for _, p := range append(append([]*devcluster.Proc{}, c.dc.Brokers...), c.dc.Bookies...) {
		if err := p.WaitServing(ctx, 2*time.Minute); err != nil {
			c.t.Fatalf("after heal: %v", err)
		}
	}
}

// pick returns a random element.
func pick[T any](rng *rand.Rand, xs []T) T { return xs[rng.IntN(len(xs))] }
