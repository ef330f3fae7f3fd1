package harness

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// clkTck is USER_HZ; 100 on every Linux architecture Go supports.
const clkTck = 100

// ProcStat is a snapshot of one process's CPU time and memory.
type ProcStat struct {
	CPUSeconds float64
	RSSBytes   int64
	HWMBytes   int64 // VmHWM: peak resident set
}

// readProc samples /proc/<pid>/stat and /proc/<pid>/status.
func readProc(pid int) (ProcStat, error) {
	var st ProcStat
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return st, err
	}
	// Fields after the command name, which is in parentheses and may contain spaces.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return st, fmt.Errorf("harness: malformed /proc/%d/stat", pid)
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 13 {
		return st, fmt.Errorf("harness: short /proc/%d/stat", pid)
	}
	// f[0] is field 3 (state); utime is field 14, stime field 15.
	ut, _ := strconv.ParseFloat(f[11], 64)
	stt, _ := strconv.ParseFloat(f[12], 64)
	st.CPUSeconds = (ut + stt) / clkTck
	s, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return st, err
	}
	for _, line := range strings.Split(string(s), "\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		switch k {
		case "VmRSS":
			st.RSSBytes = parseKB(v)
		case "VmHWM":
			st.HWMBytes = parseKB(v)
		}
	}
	return st, nil
}

func parseKB(v string) int64 {
	f := strings.Fields(v)
	if len(f) == 0 {
		return 0
	}
	n, _ := strconv.ParseInt(f[0], 10, 64)
	return n << 10
}

// selfCPU is the harness's own CPU time (the load generator), all threads.
func selfCPU() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	tv := func(t syscall.Timeval) float64 { return float64(t.Sec) + float64(t.Usec)/1e6 }
	return tv(ru.Utime) + tv(ru.Stime)
}

// server is a started child process.
type server struct {
	cmd    *exec.Cmd
	done   chan struct{}
	werr   error
	log    *os.File
	logPth string
}

func startProcess(bin string, args []string, dir, logPath string, env []string) (*server, error) {
	lf, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	cmd.Stdout, cmd.Stderr = lf, lf
	cmd.Env = append(os.Environ(), env...)
	// Own process group so a harness crash does not leave it attached to our terminal.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		lf.Close()
		return nil, err
	}
	s := &server{cmd: cmd, done: make(chan struct{}), log: lf, logPth: logPath}
	go func() { s.werr = cmd.Wait(); close(s.done) }()
	return s, nil
}

func (s *server) pid() int { return s.cmd.Process.Pid }

func (s *server) exited() bool {
	select {
	case <-s.done:
		return true
	default:
		return false
	}
}

// stop sends SIGTERM to this process only, waits, and kills it after the grace period.
func (s *server) stop(grace time.Duration) {
	if !s.exited() {
		_ = s.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-s.done:
		case <-time.After(grace):
			_ = s.cmd.Process.Kill()
			<-s.done
		}
	}
	s.log.Close()
}

// tail returns the last non-empty line of the server log, for "not available" reasons.
func (s *server) tail() string {
	b, _ := os.ReadFile(s.logPth)
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		if l := strings.TrimSpace(lines[i]); l != "" {
			if len(l) > 300 {
				l = l[:300]
			}
			return l
		}
	}
	return ""
}

// waitPort polls a TCP address until it accepts, the process exits, or ctx ends.
func waitPort(ctx context.Context, s *server, addr string) error {
	for {
		if s.exited() {
			return fmt.Errorf("%w: exited before listening (%v): %s", ErrUnavailable, s.werr, s.tail())
		}
		c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond)
		if err == nil {
			c.Close()
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w: %s not accepting: %w", ErrUnavailable, addr, errors.Join(ctx.Err(), err))
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// portFree refuses to start a server whose port already accepts: the harness would measure
// whatever else is listening there. A previous block's server may still be releasing it, so
// wait a little first.
func portFree(addr string) error {
	for i := 0; ; i++ {
		c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond)
		if err != nil {
			return nil
		}
		c.Close()
		if i == 50 {
			return fmt.Errorf("%w: %s already in use by another process", ErrUnavailable, addr)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// portNames are the placeholders expandPorts fills.
var portNames = []string{"port", "http", "etcd", "peer", "bookie", "tls", "https"}

// freePorts picks one currently free loopback port per name.
func freePorts() (map[string]string, error) {
	out := map[string]string{}
	var lns []net.Listener
	defer func() {
		for _, l := range lns {
			l.Close()
		}
	}()
	for _, n := range portNames {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		lns = append(lns, l)
		out[n] = strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
	}
	return out, nil
}

// expandPorts replaces {name} with the chosen ports.
func expandPorts(s string, ports map[string]string) string {
	for k, v := range ports {
		s = strings.ReplaceAll(s, "{"+k+"}", v)
	}
	return s
}
