package bookie

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/magnetar-io/magnetar/internal/testbin"
)

// magnetarBin is the magnetar binary TestMain builds for tests that run a real bookie process.
var magnetarBin string

func TestMain(m *testing.M) {
	os.Exit(runTests(m))
}

func runTests(m *testing.M) int {
	dir, err := os.MkdirTemp("", "magnetar-bookie-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	if magnetarBin, err = testbin.Build(dir); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return m.Run()
}

// bookieProcess is a `magnetar bookie` child process.
type bookieProcess struct {
	cmd         *exec.Cmd
	addr        string
	metricsAddr string        // set when started with --metrics-listen
	done        chan struct{} // closed when the process has exited
	err         error         // its Wait error, valid after done

	mu          sync.Mutex
	tail        []string // last log lines, for failure messages
	metricsSeen string
}

// startBookieProcess runs `magnetar bookie` on dir with a free port and waits until it
// logs that it serves.
func startBookieProcess(t *testing.T, dir string, extra ...string) *bookieProcess {
	t.Helper()
	args := append([]string{"bookie", "--listen", "127.0.0.1:0", "--log-format", "json",
		"--journal-dir", filepath.Join(dir, "journal"), "--ledger-dir", filepath.Join(dir, "ledgers")}, extra...)
	cmd := exec.Command(magnetarBin, args...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &bookieProcess{cmd: cmd, done: make(chan struct{})}
	ready := make(chan string, 1)
	go p.scan(stderr, ready)
	go func() {
		p.err = cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() { p.kill() })
	select {
	case p.addr = <-ready:
		p.mu.Lock()
		p.metricsAddr = p.metricsSeen
		p.mu.Unlock()
	case <-p.done:
		t.Fatalf("bookie exited before serving: %v\n%s", p.err, p.logs())
	case <-time.After(60 * time.Second):
		t.Fatalf("bookie did not start serving\n%s", p.logs())
	}
	return p
}

// scan keeps the last log lines and reports the listen address from "bookie serving".
func (p *bookieProcess) scan(r io.Reader, ready chan<- string) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		p.mu.Lock()
		p.tail = append(p.tail, line)
		if len(p.tail) > 50 {
			p.tail = p.tail[1:]
		}
		p.mu.Unlock()
		var rec struct {
			Msg     string `json:"msg"`
			Address string `json:"address"`
		}
		if json.Unmarshal([]byte(line), &rec) == nil && rec.Msg == "serving metrics" {
			p.mu.Lock()
			p.metricsSeen = rec.Address
			p.mu.Unlock()
		}
		if rec.Msg == "bookie serving" {
			select {
			case ready <- rec.Address:
			default:
			}
		}
	}
	_, _ = io.Copy(io.Discard, r)
}

func (p *bookieProcess) logs() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return strings.Join(p.tail, "\n")
}

// kill sends SIGKILL and waits for the exit.
func (p *bookieProcess) kill() {
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.done
}

// stop sends SIGTERM and returns the exit error (nil for a clean exit).
func (p *bookieProcess) stop(t *testing.T) error {
	t.Helper()
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
		return p.err
	case <-time.After(60 * time.Second):
		t.Fatalf("bookie did not exit after SIGTERM\n%s", p.logs())
		return nil
	}
}

// waitCtx is a context for one step of a process test.
func waitCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}
