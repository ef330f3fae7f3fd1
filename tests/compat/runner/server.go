package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// server is what a suite runs against.
type server interface {
	Start(ctx context.Context) error
	// Healthy says whether the server still answers (checked before each test).
	Healthy(ctx context.Context) bool
	Stop()
	Log() string
}

// proc is one child process with its output in a log file.
type proc struct {
	cmd  *exec.Cmd
	done chan struct{}
	log  string
}

func startProc(log, cwd string, env []string, name string, args ...string) (*proc, error) {
	f, err := os.OpenFile(log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(f, "\n=== %s %s\n", name, strings.Join(args, " "))
	cmd := exec.Command(name, args...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Dir = cwd
	cmd.Stdout, cmd.Stderr = f, f
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		_ = f.Close()
		return nil, err
	}
	p := &proc{cmd: cmd, done: make(chan struct{}), log: log}
	go func() { _ = cmd.Wait(); _ = f.Close(); close(p.done) }()
	return p, nil
}

func (p *proc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// stop sends SIGTERM to the process group and SIGKILL after grace.
func (p *proc) stop(grace time.Duration) {
	if p == nil {
		return
	}
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(grace):
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		<-p.done
	}
}

// tail returns the last n lines of a file, for failure messages.
func tail(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// standalone is `magnetar standalone` started as a client's CI starts Pulsar: with its
// config file, environment and working directory, then set up by its suite.
type standalone struct {
	bin, dir string
	// env is the environment of the client CI's start script and image, plus the
	// harness's overrides (-env, -no-security).
	env  []string
	conf string
	// cwd is the process's working directory (configs with relative paths), data the data
	// directory (default under dir).
	cwd, data string
	setup     func(ctx context.Context, s *standalone) error
	// clientConf, when set, is the client.conf `magnetar admin` reads instead of adminArgs,
	// as pulsar-admin in the client's CI image reads /pulsar/conf/client.conf (TLS with
	// the admin certificate, once authentication and authorization are on).
	clientConf string
	p          *proc
}

func (s *standalone) Log() string { return filepath.Join(s.dir, "standalone.log") }

func (s *standalone) Start(ctx context.Context) error {
	data := s.data
	if data == "" {
		data = filepath.Join(s.dir, "standalone-data")
	}
	p, err := startProc(s.Log(), s.cwd, s.env, s.bin, "standalone", "--config", s.conf, "--data-dir", data)
	if err != nil {
		return err
	}
	s.p = p
	// "until curl http://localhost:8080/metrics > /dev/null 2>&1 ; do sleep 1; done"
	if err := waitHTTP(ctx, p, "http://localhost:8080/metrics", 2*time.Minute); err != nil {
		return fmt.Errorf("standalone did not serve: %w\n%s", err, tail(s.Log(), 30))
	}
	if s.setup == nil {
		return nil
	}
	return s.setup(ctx, s)
}

// admin runs `magnetar admin` against the standalone.
func (s *standalone) admin(ctx context.Context, args ...string) error {
	if s.clientConf != "" {
		args = append([]string{"--config", s.clientConf, "admin"}, args...)
	} else {
		args = append(append([]string{"admin"}, adminArgs...), args...)
	}
	cmd := exec.CommandContext(ctx, s.bin, args...)
	cmd.Env = append(os.Environ(), s.env...)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("magnetar %s: %w: %s", strings.Join(args, " "), err, out)
	}
	return nil
}

func (s *standalone) Healthy(ctx context.Context) bool {
	if s.p == nil || s.p.exited() {
		return false
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	return httpAnswers(ctx, "http://localhost:8080/metrics") == nil
}

func (s *standalone) Stop() {
	s.p.stop(60 * time.Second)
	s.p = nil
}

// cluster is `magnetar dev-cluster` with brokers named and placed as in the client's
// integration-tests/clustered/docker-compose.yml (broker-1 and broker-2 on port 6650).
type cluster struct {
	bin, dir string
	env      []string
	p        *proc
}

func (c *cluster) Log() string { return filepath.Join(c.dir, "dev-cluster.log") }

func (c *cluster) Start(ctx context.Context) error {
	p, err := startProc(c.Log(), "", c.env, c.bin, "dev-cluster", "--data-dir", filepath.Join(c.dir, "dev-cluster"),
		"--broker-addresses", "broker-1:6650,broker-2:6650",
		// The compose file's broker environment.
		"--broker-args", "--cluster-name=cluster-a --default-number-of-namespace-bundles=1")
	if err != nil {
		return err
	}
	c.p = p
	ctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	for {
		if strings.Contains(tail(c.Log(), 40), "magnetar dev-cluster ready") {
			break
		}
		if p.exited() {
			return fmt.Errorf("dev-cluster exited:\n%s", tail(c.Log(), 30))
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("dev-cluster not ready: %w\n%s", ctx.Err(), tail(c.Log(), 30))
		case <-time.After(200 * time.Millisecond):
		}
	}
	return nil
}

func (c *cluster) Healthy(ctx context.Context) bool {
	if c.p == nil || c.p.exited() {
		return false
	}
	var d net.Dialer
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	conn, err := d.DialContext(ctx, "tcp", "broker-1:6650")
	if err != nil {
		return false
	}
	_ = conn.Close()
	return true
}

func (c *cluster) Stop() {
	c.p.stop(90 * time.Second)
	c.p = nil
}

func httpAnswers(ctx context.Context, url string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	_ = resp.Body.Close()
	if resp.StatusCode >= 500 {
		return fmt.Errorf("%s: %s", url, resp.Status)
	}
	return nil
}

func waitHTTP(ctx context.Context, p *proc, url string, d time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	for {
		err := httpAnswers(ctx, url)
		if err == nil {
			return nil
		}
		if p.exited() {
			return errors.New("the process exited")
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w (last: %v)", ctx.Err(), err)
		case <-time.After(time.Second):
		}
	}
}
