package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"time"
)

// Outcomes of one test.
const (
	passed   = "passed"
	failed   = "failed"
	skipped  = "skipped"  // the test skipped itself (t.Skip)
	timedout = "timeout"  // still running at the time limit
	excluded = "excluded" // listed in exclusions.go with a reason outside Magnetar
)

// result is one test's outcome.
type result struct {
	Suite   string        `json:"suite"`
	Test    string        `json:"test"`
	Outcome string        `json:"outcome"`
	Seconds float64       `json:"seconds"`
	Reason  string        `json:"reason,omitempty"` // first failure line, or the exclusion's reason
	Log     string        `json:"log,omitempty"`
	Elapsed time.Duration `json:"-"`
	// ServerDied: the server was not healthy after the test and was restarted.
	ServerDied bool `json:"serverDied,omitempty"`
}

func matches(pattern, name string) bool {
	ok, err := regexp.MatchString(pattern, name)
	return err == nil && ok
}

// runTest runs one top-level test of binary as its own process in dir, killing it after
// limit (the test binary's own -test.timeout fires first and prints the stacks).
func runTest(ctx context.Context, binary, dir, name string, limit time.Duration, logPath string, extraEnv []string) result {
	r := result{Test: name, Log: logPath}
	f, err := os.Create(logPath)
	if err != nil {
		r.Outcome, r.Reason = failed, err.Error()
		return r
	}
	defer f.Close()
	ctx, cancel := context.WithTimeout(ctx, limit+time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary, "-test.run", "^"+regexp.QuoteMeta(name)+"$", "-test.v",
		"-test.count", "1", "-test.timeout", limit.String())
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), extraEnv...)
	cmd.Stdout, cmd.Stderr = f, f
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	start := time.Now()
	runErr := cmd.Run()
	r.Elapsed = time.Since(start)
	r.Seconds = float64(r.Elapsed.Milliseconds()) / 1000
	_ = f.Sync()
	r.Outcome, r.Reason = judge(logPath, name, runErr)
	return r
}

// judge reads a test's -test.v output: its own "--- PASS/FAIL/SKIP: Name" line decides,
// a "panic: test timed out" is a timeout, anything else (a crash, no verdict) a failure.
// The reason is the first failure: testify's "Error Trace" place and "Error:" text, a
// t.Error line, or a panic.
func judge(logPath, name string, runErr error) (string, string) {
	b, err := os.ReadFile(logPath)
	if err != nil {
		return failed, err.Error()
	}
	lines := strings.Split(string(b), "\n")
	var verdict string
	timeout := false
	for _, l := range lines {
		switch {
		case strings.HasPrefix(l, "--- PASS: "+name+" "):
			verdict = passed
		case strings.HasPrefix(l, "--- FAIL: "+name+" "):
			verdict = failed
		case strings.HasPrefix(l, "--- SKIP: "+name+" "):
			verdict = skipped
		case strings.HasPrefix(l, "panic: test timed out"):
			timeout = true
		}
	}
	switch {
	case timeout:
		return timedout, "test timed out"
	case verdict == passed && runErr == nil:
		return passed, ""
	case verdict == skipped && runErr == nil:
		return skipped, firstSkip(logPath)
	case verdict == "" && runErr == nil:
		return failed, "no verdict line in the output"
	}
	if r := firstFailure(lines); r != "" {
		return failed, r
	}
	if runErr != nil {
		return failed, runErr.Error()
	}
	return failed, ""
}

// firstFailure finds the first failure report in -test.v output.
func firstFailure(lines []string) string {
	label := func(t string) bool {
		for _, l := range []string{"Error Trace:", "Error:", "Test:", "Messages:"} {
			if strings.HasPrefix(t, l) {
				return true
			}
		}
		return false
	}
	for i, l := range lines {
		t := strings.TrimSpace(l)
		switch {
		case strings.HasPrefix(l, "panic: "):
			return t
		case strings.HasPrefix(t, "Error Trace:"):
			where := filepath.Base(strings.TrimSpace(strings.TrimPrefix(t, "Error Trace:")))
			msg := []string{}
			for j := i + 1; j < len(lines) && j < i+12; j++ {
				u := strings.TrimSpace(lines[j])
				if strings.HasPrefix(u, "Error:") {
					msg = append(msg, strings.TrimSpace(strings.TrimPrefix(u, "Error:")))
					for k := j + 1; k < len(lines) && k < j+4; k++ {
						v := strings.TrimSpace(lines[k])
						if v == "" || label(v) || strings.HasPrefix(v, "Diff:") || strings.HasPrefix(v, "---") {
							break
						}
						msg = append(msg, v)
					}
					break
				}
			}
			return where + ": " + strings.Join(msg, " ")
		case strings.Contains(t, "_test.go:") && !strings.Contains(t, "level=") && strings.HasSuffix(strings.Fields(t)[0], ":") && len(strings.Fields(t)) > 1:
			return t
		}
	}
	return ""
}

func firstSkip(logPath string) string {
	b, _ := os.ReadFile(logPath)
	for _, l := range strings.Split(string(b), "\n") {
		if strings.Contains(l, "_test.go:") {
			return strings.TrimSpace(l)
		}
	}
	return ""
}

// eachTest runs every named test through one(name, logPath), each its own process, against
// srv, restarting srv when a test left it unhealthy; excluded tests are reported, not run.
func eachTest(ctx context.Context, suiteName, logs string, names []string, srv server, progress func(result),
	one func(ctx context.Context, name, logPath string) result) []result {
	if err := os.MkdirAll(logs, 0o755); err != nil {
		return []result{{Suite: suiteName, Test: "(setup)", Outcome: failed, Reason: err.Error()}}
	}
	var out []result
	for _, name := range names {
		if ctx.Err() != nil {
			break
		}
		if reason, ok := exclusions[suiteName+"/"+name]; ok {
			r := result{Suite: suiteName, Test: name, Outcome: excluded, Reason: reason}
			out = append(out, r)
			progress(r)
			continue
		}
		r := one(ctx, name, filepath.Join(logs, logName(name)))
		r.Suite = suiteName
		if !srv.Healthy(ctx) {
			r.ServerDied = true
			r.Reason = strings.TrimSpace(r.Reason + " [server unhealthy after the test; restarted; log " + srv.Log() + "]")
			srv.Stop()
			if err := srv.Start(ctx); err != nil {
				fmt.Fprintf(os.Stderr, "restart after %s failed: %v\n", name, err)
				out = append(out, r)
				progress(r)
				break
			}
		}
		out = append(out, r)
		progress(r)
	}
	return out
}

// logName makes a file name of a test name (pytest node ids have slashes and colons).
func logName(name string) string {
	return strings.NewReplacer("/", "_", ":", "_", "[", "_", "]", "_", " ", "_").Replace(name) + ".log"
}
