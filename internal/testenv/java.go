package testenv

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// JavaOptions tune a JVM started by RunJava or StartJava.
type JavaOptions struct {
	// Heap is -Xmx (default 256m): several JVMs share a 2-core machine with the tests.
	Heap string
	// Props are -Dkey=value system properties.
	Props map[string]string
	Env   []string
	Dir   string
	Stdin []byte
	// Flags replace the default GC and JIT flags (a serial collector and the C1 compiler
	// only, which start fast and stay small next to the tests); benchmarks pass the
	// program's production flags.
	Flags []string
}

func javaArgs(classpath []string, main string, args []string, o JavaOptions) []string {
	heap := o.Heap
	if heap == "" {
		heap = "256m"
	}
	out := []string{"-Xmx" + heap}
	if o.Flags != nil {
		out = append(out, o.Flags...)
	} else {
		out = append(out, "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1")
	}
	out = append(out, "-Djava.awt.headless=true")
	for k, v := range o.Props {
		out = append(out, "-D"+k+"="+v)
	}
	return append(append(out, "-cp", strings.Join(classpath, ":"), main), args...)
}

func javaBin() (string, error) {
	if h := os.Getenv("JAVA_HOME"); h != "" {
		return h + "/bin/java", nil
	}
	p, err := exec.LookPath("java")
	if err != nil {
		return "", fmt.Errorf("java is not installed (Debian: apt-get install -y openjdk-17-jre-headless): %w", err)
	}
	return p, nil
}

// RunJava runs main to completion (bounded by ctx) and returns its combined output.
func RunJava(ctx context.Context, classpath []string, main string, args []string, o JavaOptions) (string, error) {
	bin, err := javaBin()
	if err != nil {
		return "", err
	}
	cmd := exec.CommandContext(ctx, bin, javaArgs(classpath, main, args, o)...)
	cmd.Env = append(os.Environ(), o.Env...)
	cmd.Dir = o.Dir
	if o.Stdin != nil {
		cmd.Stdin = bytes.NewReader(o.Stdin)
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	out, err := cmd.CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("java %s %s: %w", main, strings.Join(args, " "), err)
	}
	return string(out), nil
}

// Process is a program started in the background; its output is kept for failure reports.
type Process struct {
	cmd  *exec.Cmd
	out  *syncBuffer
	done chan struct{}
	err  error
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.b.Len() > 4<<20 {
		return len(p), nil // enough to diagnose; do not grow without bound
	}
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// StartJava starts main in the background; Stop (registered with tb.Cleanup) kills it.
func StartJava(tb testing.TB, classpath []string, main string, args []string, o JavaOptions) *Process {
	tb.Helper()
	p, err := StartJavaProcess(classpath, main, args, o)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(p.Stop)
	return p
}

// StartJavaProcess is StartJava for callers without a testing.TB; they call Stop.
func StartJavaProcess(classpath []string, main string, args []string, o JavaOptions) (*Process, error) {
	bin, err := javaBin()
	if err != nil {
		return nil, err
	}
	return StartProcess(bin, javaArgs(classpath, main, args, o), o.Env, o.Dir)
}

// Start starts a program in its own process group; tb.Cleanup kills the group.
func Start(tb testing.TB, bin string, args, env []string, dir string) *Process {
	tb.Helper()
	p, err := StartProcess(bin, args, env, dir)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(p.Stop)
	return p
}

// StartProcess starts a program in its own process group; the caller calls Stop.
func StartProcess(bin string, args, env []string, dir string) (*Process, error) {
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Dir = dir
	p := &Process{cmd: cmd, out: &syncBuffer{}, done: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = p.out, p.out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("testenv: starting %s: %w", bin, err)
	}
	go func() { p.err = cmd.Wait(); close(p.done) }()
	return p, nil
}

// Pid is the process id (its process group id too).
func (p *Process) Pid() int { return p.cmd.Process.Pid }

// Output is what the process printed so far.
func (p *Process) Output() string { return p.out.String() }

// Exited tells whether the process has ended (and how).
func (p *Process) Exited() (bool, error) {
	select {
	case <-p.done:
		return true, p.err
	default:
		return false, nil
	}
}

// Stop sends SIGTERM to the process group and SIGKILL if it is still there after 20 s.
func (p *Process) Stop() {
	if exited, _ := p.Exited(); exited {
		return
	}
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(20 * time.Second):
		p.Kill()
	}
}

// Kill sends SIGKILL to the process group and waits for the process.
func (p *Process) Kill() {
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
	<-p.done
}

// Signal sends sig to the process (not its group).
func (p *Process) Signal(sig syscall.Signal) error { return p.cmd.Process.Signal(sig) }

// WaitExit waits up to d for the process to end and tells whether it did.
func (p *Process) WaitExit(d time.Duration) bool {
	select {
	case <-p.done:
		return true
	case <-time.After(d):
		return false
	}
}
