package testenv

import (
	"bytes"
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"
)

// startTimeout bounds how long a server may take to accept connections: generous, since
// it only catches hangs on a loaded machine.
const startTimeout = 3 * time.Minute

var buildMu sync.Mutex

// GoBinary returns the path of a Go program built with `go install pkg@version` into
// ~/.cache/magnetar-<what>/<version>, building it the first time (minutes on a loaded
// machine). A file lock keeps test processes of several packages from building at once.
func GoBinary(tb testing.TB, what, pkg, version string) string {
	tb.Helper()
	buildMu.Lock()
	defer buildMu.Unlock()
	root, err := CacheDir(what)
	if err != nil {
		tb.Fatal(err)
	}
	dir := filepath.Join(root, version)
	bin := filepath.Join(dir, filepath.Base(pkg))
	if _, err := os.Stat(bin); err == nil {
		return bin
	}
	unlock, err := lockDir(root)
	if err != nil {
		tb.Fatal(err)
	}
	defer unlock()
	if _, err := os.Stat(bin); err == nil {
		return bin
	}
	tb.Logf("testenv: building %s@%s into %s (once)", pkg, version, dir)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", "install", pkg+"@"+version)
	// Outside any module, with the tool's own build settings, not the test run's.
	cmd.Dir = os.TempDir()
	cmd.Env = append(os.Environ(), "GOBIN="+dir, "GOFLAGS=-buildvcs=false", "CGO_ENABLED=0", "GOWORK=off")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		tb.Fatalf("testenv: go install %s@%s failed (the Go module proxy must be reachable): %v\n%s", pkg, version, err, tail(out.String(), 4000))
	}
	return bin
}

// WaitTCP waits until addr accepts connections, failing the test if p exits first or
// startTimeout passes.
func WaitTCP(tb testing.TB, p *Process, name, addr string) {
	tb.Helper()
	deadline := time.Now().Add(startTimeout)
	for {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
			return
		}
		if exited, err := p.Exited(); exited {
			tb.Fatalf("testenv: %s exited before listening on %s: %v\n%s", name, addr, err, tail(p.Output(), 4000))
		}
		if time.Now().After(deadline) {
			tb.Fatalf("testenv: %s did not listen on %s within %s\n%s", name, addr, startTimeout, tail(p.Output(), 4000))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func hostPort(port int) string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(port)) }

func mkdir(tb testing.TB, dir string) {
	tb.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		tb.Fatalf("testenv: %v", err)
	}
}

// lockDir takes an exclusive flock on dir/.lock until unlock is called, so an install into
// a shared cache runs once across test processes running in parallel.
func lockDir(dir string) (unlock func(), err error) {
	lock, err := os.OpenFile(filepath.Join(dir, ".lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		lock.Close()
		return nil, err
	}
	return func() {
		_ = syscall.Flock(int(lock.Fd()), syscall.LOCK_UN)
		lock.Close()
	}, nil
}
