package testenv

import (
	"net"
	"strconv"
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
	bin := DebianProgram(tb, "redis-server", "redis-server")
	r := &Redis{Dir: tb.TempDir(), bin: bin, tb: tb}
	port := FreePort(tb)
	r.Addr = net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	r.args = []string{"--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--dir", r.Dir, "--save", "",
		"--appendonly", "yes", "--appendfsync", "always", "--protected-mode", "no", "--daemonize", "no"}
	r.Start()
	tb.Cleanup(r.Stop)
	return r
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
