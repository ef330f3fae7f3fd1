package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// pytestKind runs Python tests over the official client (pulsar-client from PyPI), one
// pytest process per test: our module (tests/compat/python) or the client's own tests/.
type pytestKind struct {
	ours bool
}

// officialPythonFiles are the client's test files in the order its tests/run-unit-tests.sh
// runs them.
var officialPythonFiles = []string{"custom_logger_test.py", "debug_logger_test.py", "interrupted_test.py",
	"auto_cluster_failover_test.py", "pulsar_test.py", "schema_test.py", "table_view_test.py",
	"reader_test.py", "asyncio_test.py"}

// pythonTestsDir is the writable copy of the official client's tests/ (empty if none).
func pythonTestsDir(o options) string {
	return filepath.Join(o.cache, "pulsar-client-python@"+o.pythonClient, "tests")
}

func (k *pytestKind) dir(o options) string {
	if k.ours {
		return filepath.Join(o.repo, "tests", "compat", "python")
	}
	return pythonTestsDir(o)
}

// prepare installs the client from PyPI and, for the official suite, copies the client's
// tests/ from -python-src (a checkout of apache/pulsar-client-python at the version's
// tag), or clones that tag into the cache. None of it is committed.
func (k *pytestKind) prepare(o options, s *suite) error {
	pkgs := []string{"pulsar-client[avro]==" + o.pythonClient, "pytest"}
	if !k.ours {
		// What the client's tests import besides the client: protobuf (schema_test.py), and
		// testcontainers, which its tests/run-unit-tests.sh installs.
		pkgs = append(pkgs, "protobuf", "testcontainers")
	}
	pip := exec.Command("python3", append([]string{"-m", "pip", "install", "-q", "--disable-pip-version-check"}, pkgs...)...)
	pip.Stdout, pip.Stderr = os.Stderr, os.Stderr
	if err := pip.Run(); err != nil {
		return fmt.Errorf("pip install %s: %w", strings.Join(pkgs, " "), err)
	}
	if k.ours {
		return nil
	}
	dst := pythonTestsDir(o)
	src := o.pythonSrc
	if src == "" {
		checkout := filepath.Join(o.cache, "pulsar-client-python-src@"+o.pythonClient)
		if _, err := os.Stat(filepath.Join(checkout, "tests")); err != nil {
			clone := exec.Command("git", "clone", "--depth", "1", "--branch", "v"+o.pythonClient,
				"https://github.com/apache/pulsar-client-python.git", checkout)
			if out, err := clone.CombinedOutput(); err != nil {
				return fmt.Errorf("the official Python suite comes from the client's repository, which could not be cloned (%v: %s); give a checkout with -python-src or PULSAR_CLIENT_PYTHON_SRC", err, strings.TrimSpace(string(out)))
			}
		}
		src = checkout
	}
	if err := os.RemoveAll(dst); err != nil {
		return err
	}
	return copyTree(filepath.Join(src, "tests"), dst)
}

func (k *pytestKind) list(o options, s *suite) ([]string, error) {
	args := []string{"-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider"}
	if !k.ours {
		args = append(args, officialPythonFiles...)
	}
	cmd := exec.Command("python3", args...)
	cmd.Dir = k.dir(o)
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("pytest --collect-only in %s: %w: %s", cmd.Dir, err, lastLines(string(out), 10))
	}
	var names []string
	for _, l := range strings.Split(string(out), "\n") {
		l = strings.TrimSpace(l)
		if f := o.filter(s.Name); strings.Contains(l, "::") && (f == "" || matches(f, l)) {
			names = append(names, l)
		}
	}
	return names, nil
}

func (k *pytestKind) run(ctx context.Context, o options, s *suite, names []string, logs string, srv server, progress func(result)) []result {
	dir := k.dir(o)
	return eachTest(ctx, s.Name, logs, names, srv, progress, func(ctx context.Context, name, logPath string) result {
		return runPytest(ctx, dir, name, o.limit, logPath)
	})
}

// runPytest runs one pytest node id and judges it by pytest's exit code and summary.
func runPytest(ctx context.Context, dir, node string, limit time.Duration, logPath string) result {
	r := result{Test: node, Log: logPath}
	f, err := os.Create(logPath)
	if err != nil {
		r.Outcome, r.Reason = failed, err.Error()
		return r
	}
	defer f.Close()
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	cmd := exec.CommandContext(ctx, "python3", "-m", "pytest", "-q", "-p", "no:cacheprovider", "-rfEs", node)
	cmd.Dir = dir
	cmd.Stdout, cmd.Stderr = f, f
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	start := time.Now()
	runErr := cmd.Run()
	r.Elapsed = time.Since(start)
	r.Seconds = float64(r.Elapsed.Milliseconds()) / 1000
	out, _ := os.ReadFile(logPath)
	text := string(out)
	var ee *exec.ExitError
	switch {
	case ctx.Err() == context.DeadlineExceeded:
		r.Outcome, r.Reason = timedout, "test timed out"
	case runErr == nil && strings.Contains(text, " skipped") && !strings.Contains(text, " passed"):
		r.Outcome, r.Reason = skipped, pytestLine(text, "SKIPPED")
	case runErr == nil:
		r.Outcome = passed
	case errors.As(runErr, &ee) && ee.ExitCode() == 5:
		r.Outcome, r.Reason = failed, "pytest collected no test"
	default:
		r.Outcome = failed
		if r.Reason = pytestLine(text, "FAILED"); r.Reason == "" {
			r.Reason = pytestLine(text, "ERROR")
		}
		if r.Reason == "" {
			r.Reason = lastLines(text, 3)
		}
	}
	return r
}

// pytestLine returns the reason of the first short-summary line starting with prefix.
func pytestLine(text, prefix string) string {
	for _, l := range strings.Split(text, "\n") {
		if strings.HasPrefix(l, prefix+" ") {
			if _, reason, ok := strings.Cut(l, " - "); ok {
				return reason
			}
			return strings.TrimPrefix(l, prefix+" ")
		}
	}
	return ""
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, " | ")
}

// stagePythonTokens makes the token files build-support/start-test-service-inside-container.sh
// makes before Pulsar starts: the HMAC secret at /pulsar/data/tokens/secret.key (the path its
// standalone-ssl.conf names), the token-principal token, copied to tests/.test-token.txt.
func stagePythonTokens(o options, root string) error {
	dir := filepath.Join(root, "data", "tokens")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	key := filepath.Join(dir, "secret.key")
	if out, err := exec.Command(o.magnetar, "tokens", "create-secret-key", "--output", key).CombinedOutput(); err != nil {
		return fmt.Errorf("magnetar tokens create-secret-key: %w: %s", err, out)
	}
	tok, err := exec.Command(o.magnetar, "tokens", "create", "--subject", "token-principal", "--secret-key", "file://"+key).Output()
	if err != nil {
		return fmt.Errorf("magnetar tokens create: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "token.txt"), tok, 0o644); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(pythonTestsDir(o), ".test-token.txt"), tok, 0o644)
}

// pythonCISetup is the REST part of start-test-service-inside-container.sh: cluster URLs,
// tenants and namespaces with their grants, sent as the superUser token. Like its curl
// calls, an answer's status is not checked (some already exist).
func pythonCISetup(ctx context.Context, s *standalone) error {
	key := "file:///pulsar/data/tokens/secret.key"
	tok, err := exec.CommandContext(ctx, s.bin, "tokens", "create", "--subject", "superUser", "--secret-key", key).Output()
	if err != nil {
		return fmt.Errorf("magnetar tokens create --subject superUser: %w", err)
	}
	token := strings.TrimSpace(string(tok))
	for _, p := range [][2]string{
		{"clusters/standalone", `{"serviceUrl":"http://localhost:8080/","serviceUrlTls":"https://localhost:8443/","brokerServiceUrl":"pulsar://localhost:6650/","brokerServiceUrlTls":"pulsar+ssl://localhost:6651/"}`},
		{"tenants/public", `{"adminRoles":["anonymous"],"allowedClusters":["standalone"]}`},
		{"namespaces/public/default", `{"auth_policies":{"namespace_auth":{"anonymous":["produce","consume"]}},"replication_clusters":["standalone"]}`},
		{"namespaces/public/default-2", `{"auth_policies":{"namespace_auth":{"anonymous":["produce","consume"]}},"replication_clusters":["standalone"]}`},
		{"tenants/private", `{"adminRoles":[],"allowedClusters":["standalone"]}`},
		{"namespaces/private/auth", `{"auth_policies":{"namespace_auth":{"token-principal":["produce","consume"]}},"replication_clusters":["standalone"]}`},
	} {
		req, err := http.NewRequestWithContext(ctx, http.MethodPut, "http://localhost:8080/admin/v2/"+p[0], bytes.NewReader([]byte(p[1])))
		if err != nil {
			return err
		}
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return fmt.Errorf("PUT %s: %w", p[0], err)
		}
		fmt.Fprintf(os.Stderr, "python-official setup: PUT %s: %s\n", p[0], resp.Status)
		_ = resp.Body.Close()
	}
	return nil
}
