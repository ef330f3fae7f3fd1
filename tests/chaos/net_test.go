package chaos

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
)

// network is a bridge in a hub namespace with one namespace per node, on 10.77.<k>.0/24;
// the test process reaches every node through a veth of its own (.254).
type network struct {
	t     testing.TB
	k     int
	nodes map[string]*node
	order []string
	mu    sync.Mutex
}

type node struct {
	name, ns, ip string
}

// sh runs a command and fails the test on error.
func sh(t testing.TB, args ...string) {
	t.Helper()
	if out, err := exec.Command(args[0], args[1:]...).CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// requireRoot checks the tools the harness needs, installing Debian's nftables if nft is
// missing. It fails (does not skip) when it cannot: CI runs as root.
func requireRoot(t testing.TB) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Fatal("the chaos harness needs root (network namespaces, nftables)")
	}
	if _, err := exec.LookPath("nft"); err != nil {
		out, err := exec.Command("sh", "-c", "apt-get install -y nftables || (apt-get update && apt-get install -y nftables)").CombinedOutput()
		if err != nil {
			t.Fatalf("installing nftables: %v\n%s", err, out)
		}
	}
	for _, tool := range []string{"ip", "tc", "nft"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s not found: the chaos harness needs iproute2 and nftables", tool)
		}
	}
}

// newNetwork builds the hub and one namespace per name; everything is removed at cleanup.
func newNetwork(t testing.TB, names []string) *network {
	t.Helper()
	requireRoot(t)
	k := 20 + os.Getpid()%200
	n := &network{t: t, k: k, nodes: map[string]*node{}}
	hub := fmt.Sprintf("mgc%dhub", k)
	root := fmt.Sprintf("mgc%dr", k)
	// A previous run killed before its cleanup may have left these behind.
	_ = exec.Command("ip", "link", "del", root).Run()
	_ = exec.Command("ip", "netns", "del", hub).Run()
	t.Cleanup(func() {
		for _, nd := range n.nodes {
			_ = exec.Command("ip", "netns", "del", nd.ns).Run()
		}
		_ = exec.Command("ip", "link", "del", root).Run()
		_ = exec.Command("ip", "netns", "del", hub).Run()
	})
	sh(t, "ip", "netns", "add", hub)
	sh(t, "ip", "-n", hub, "link", "add", "br0", "type", "bridge")
	sh(t, "ip", "-n", hub, "link", "set", "br0", "up")
	sh(t, "ip", "link", "add", root, "type", "veth", "peer", "name", "r", "netns", hub)
	sh(t, "ip", "-n", hub, "link", "set", "r", "master", "br0", "up")
	sh(t, "ip", "addr", "add", fmt.Sprintf("10.77.%d.254/24", k), "dev", root)
	sh(t, "ip", "link", "set", root, "up")
	for i, name := range names {
		nd := &node{name: name, ns: fmt.Sprintf("mgc%d-%s", k, name), ip: fmt.Sprintf("10.77.%d.%d", k, i+1)}
		_ = exec.Command("ip", "netns", "del", nd.ns).Run()
		sh(t, "ip", "netns", "add", nd.ns)
		n.nodes[name] = nd
		n.order = append(n.order, name)
		port := fmt.Sprintf("n%d", i)
		sh(t, "ip", "-n", hub, "link", "add", port, "type", "veth", "peer", "name", "eth0", "netns", nd.ns)
		sh(t, "ip", "-n", hub, "link", "set", port, "master", "br0", "up")
		sh(t, "ip", "-n", nd.ns, "addr", "add", nd.ip+"/24", "dev", "eth0")
		sh(t, "ip", "-n", nd.ns, "link", "set", "eth0", "up")
		sh(t, "ip", "-n", nd.ns, "link", "set", "lo", "up")
		sh(t, "ip", "netns", "exec", nd.ns, "nft", "add table inet chaos; "+
			"add chain inet chaos in { type filter hook input priority 0; }; "+
			"add chain inet chaos out { type filter hook output priority 0; }")
	}
	return n
}

// prefix is the command prefix that runs a program in name's namespace.
func (n *network) prefix(name string) []string {
	return []string{"ip", "netns", "exec", n.nodes[name].ns}
}

func (n *network) ip(name string) string { return n.nodes[name].ip }

// nft runs an nft command in name's namespace.
func (n *network) nft(name, cmd string) {
	n.t.Helper()
	sh(n.t, "ip", "netns", "exec", n.nodes[name].ns, "nft", cmd)
}

// drop makes to silently drop every packet from `from` (one way: from's packets vanish
// at to; to's packets still reach from). Silent drops, unlike a link down, give senders no
// error: they wait, as behind a real partition.
func (n *network) drop(from, to string) {
	n.nft(to, fmt.Sprintf("add rule inet chaos in ip saddr %s drop", n.ip(from)))
}

// partition cuts every pair of nodes that are in different groups, both ways. Nodes in no
// group keep every link (the test process and the fault proxy are never cut).
func (n *network) partition(groups ...[]string) {
	for i, g := range groups {
		for _, h := range groups[i+1:] {
			for _, a := range g {
				for _, b := range h {
					n.drop(a, b)
					n.drop(b, a)
				}
			}
		}
	}
}

// isolate cuts name from every other node (both ways), not from the test process.
func (n *network) isolate(name string) {
	var rest []string
	for _, o := range n.order {
		if o != name {
			rest = append(rest, o)
		}
	}
	n.partition([]string{name}, rest)
}

// heal removes every drop rule and rate limit and sets every link up.
func (n *network) heal() {
	for _, name := range n.order {
		n.nft(name, "flush chain inet chaos in; flush chain inet chaos out")
		_ = exec.Command("ip", "netns", "exec", n.nodes[name].ns, "tc", "qdisc", "del", "dev", "eth0", "root").Run()
		sh(n.t, "ip", "-n", n.nodes[name].ns, "link", "set", "eth0", "up")
	}
}

// linkDown sets name's link down (loud: senders get errors at once) or up.
func (n *network) link(name string, up bool) {
	state := "down"
	if up {
		state = "up"
	}
	sh(n.t, "ip", "-n", n.nodes[name].ns, "link", "set", "eth0", state)
}

// rateLimit shapes what name sends to rate (tc tbf, e.g. "1mbit").
func (n *network) rateLimit(name, rate string) {
	sh(n.t, "ip", "netns", "exec", n.nodes[name].ns, "tc", "qdisc", "replace", "dev", "eth0", "root",
		"tbf", "rate", rate, "burst", "32kbit", "latency", "400ms")
}
