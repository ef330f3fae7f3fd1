package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/magnetar-io/magnetar/internal/testbin"
)

// binary is the magnetar binary TestMain built.
var binary string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "magnetar-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if binary, err = testbin.Build(dir); err != nil {
		fmt.Fprintln(os.Stderr, "building magnetar:", err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// proc is a running magnetar process whose JSON log we watch.
type proc struct {
	t      testing.TB
	cmd    *exec.Cmd
	mu     sync.Mutex
	lines  []string
	ready  chan map[string]any
	exited chan struct{}
	// readyMsg is the log message that means ready ("" = the standalone's).
	readyMsg string
}

// startStandalone runs `magnetar standalone` on free loopback ports with data in dir and
// waits for its "ready" log line, which carries the broker and HTTP addresses.
func startStandalone(t testing.TB, dir string, extra ...string) (*proc, string, string) {
	t.Helper()
	args := append([]string{"standalone", "--log-format", "json", "--data-dir", dir,
		"--metadata-listen", "http://127.0.0.1:0", "--metadata-peer", "http://127.0.0.1:0",
		"--bookie-address", "127.0.0.1:0", "--bind-address", "127.0.0.1", "--port", "0", "--http-port", "0"}, extra...)
	p := &proc{t: t, cmd: exec.Command(binary, args...), ready: make(chan map[string]any, 1), exited: make(chan struct{})}
	stderr, err := p.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go p.read(stderr)
	go func() { _ = p.cmd.Wait(); close(p.exited) }()
	t.Cleanup(func() { p.kill() })
	select {
	case rec := <-p.ready:
		broker := strings.TrimPrefix(fmt.Sprint(rec["broker"]), "pulsar://")
		httpAddr := strings.TrimPrefix(fmt.Sprint(rec["http"]), "http://")
		return p, broker, httpAddr
	case <-p.exited:
		t.Fatalf("magnetar standalone exited before ready:\n%s", p.log())
	case <-time.After(2 * time.Minute):
		t.Fatalf("magnetar standalone not ready:\n%s", p.log())
	}
	return nil, "", ""
}

func (p *proc) read(r io.Reader) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		p.mu.Lock()
		if len(p.lines) < 2000 {
			p.lines = append(p.lines, line)
		}
		p.mu.Unlock()
		var rec map[string]any
		want := p.readyMsg
		if want == "" {
			want = "magnetar standalone ready"
		}
		if json.Unmarshal([]byte(line), &rec) == nil && rec["msg"] == want {
			select {
			case p.ready <- rec:
			default:
			}
		}
	}
}

func (p *proc) log() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return strings.Join(p.lines, "\n")
}

// kill SIGKILLs the process and waits for it to be gone.
func (p *proc) kill() {
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.exited
}

// stop sends SIGTERM and waits for a clean exit.
func (p *proc) stop(ctx context.Context) error {
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		return err
	}
	select {
	case <-p.exited:
		if code := p.cmd.ProcessState.ExitCode(); code != 0 {
			return fmt.Errorf("exit code %d:\n%s", code, p.log())
		}
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
