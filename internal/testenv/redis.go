package testenv

import (
	"net"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Redis is a Redis server (Debian's redis-server) on a free loopback port, its append-only
// file fsynced on every write so a restart keeps every acknowledged write.
type Redis struct {
	Addr string
	Dir  string
	bin  string
	args []string
	proc *Process
	tb   testing.TB
}

// StartRedis installs Redis when missing and starts it; tb.Cleanup stops it.
func StartRedis(tb testing.TB) *Redis {
	tb.Helper()
	return startRedis(tb)
}

func startRedis(tb testing.TB, extra ...string) *Redis {
	tb.Helper()
	bin := DebianProgram(tb, "redis-server", "redis-server")
	r := &Redis{Dir: tb.TempDir(), bin: bin, tb: tb}
	port := FreePort(tb)
	r.Addr = net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	r.args = append([]string{"--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--dir", r.Dir, "--save", "",
		"--appendonly", "yes", "--appendfsync", "always", "--protected-mode", "no", "--daemonize", "no"}, extra...)
	r.Start()
	tb.Cleanup(r.Stop)
	return r
}

// StartRedisCluster starts n Redis servers in cluster mode and joins them into one Redis
// Cluster of n primaries (redis-cli --cluster create), waiting until every node reports
// cluster_state:ok. CLI is redis-cli's path, for the test's own checks.
func StartRedisCluster(tb testing.TB, n int) (nodes []*Redis, cli string) {
	tb.Helper()
	cli = DebianProgram(tb, "redis-cli", "redis-tools")
	addrs := make([]string, n)
	for i := 0; i < n; i++ {
		r := startRedis(tb, "--cluster-enabled", "yes", "--cluster-node-timeout", "5000")
		nodes = append(nodes, r)
		addrs[i] = r.Addr
	}
	args := append([]string{"--cluster", "create"}, addrs...)
	args = append(args, "--cluster-replicas", "0", "--cluster-yes")
	if out, err := exec.Command(cli, args...).CombinedOutput(); err != nil {
		tb.Fatalf("redis-cli --cluster create: %v\n%s", err, out)
	}
	deadline := time.Now().Add(time.Minute)
	for _, r := range nodes {
		host, port, _ := net.SplitHostPort(r.Addr)
		for {
			out, _ := exec.Command(cli, "-h", host, "-p", port, "cluster", "info").CombinedOutput()
			if strings.Contains(string(out), "cluster_state:ok") {
				break
			}
			if time.Now().After(deadline) {
				tb.Fatalf("redis cluster node %s not ok within a minute:\n%s", r.Addr, out)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	return nodes, cli
}

// Start starts the server (again after Stop).
func (r *Redis) Start() {
	r.tb.Helper()
	if r.proc != nil {
		if exited, _ := r.proc.Exited(); !exited {
			return
		}
	}
	r.proc = Start(r.tb, r.bin, r.args, nil, r.Dir)
	WaitTCP(r.tb, r.proc, "redis-server", r.Addr)
}

// Stop shuts the server down (SIGTERM: it finishes the append-only file).
func (r *Redis) Stop() {
	if r.proc == nil {
		return
	}
	if exited, _ := r.proc.Exited(); exited {
		return
	}
	_ = r.proc.Signal(syscall.SIGTERM)
	if !r.proc.WaitExit(time.Minute) {
		r.proc.Kill()
	}
}
