package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"
)

// adminArgs point `magnetar admin` at the standalone of the namespace.
var adminArgs = []string{"--admin-url", "http://localhost:8080"}

type options struct {
	magnetar, version, out, cache, run string
	suites                             []string
	limit                              time.Duration
	race                               bool
	env, only                          listFlag
	noSecurity                         bool
	conf                               string
	pythonSrc, pythonClient            string
	repo                               string // the magnetar repository (tests/compat lives there)
}

// filter is the test-name filter of a suite: its -only, else -run.
func (o options) filter(suite string) string {
	for _, f := range o.only {
		if name, re, ok := strings.Cut(f, "="); ok && name == suite {
			return re
		}
	}
	return o.run
}

// prepErrs are the suites that could not be prepared (name -> why), passed to the inner run.
var prepErrs = map[string]string{}

type listFlag []string

func (l *listFlag) String() string     { return strings.Join(*l, " ") }
func (l *listFlag) Set(s string) error { *l = append(*l, s); return nil }

func main() { os.Exit(run(os.Args[1:])) }

func run(args []string) int {
	var o options
	fs := flag.NewFlagSet("runner", flag.ContinueOnError)
	home, _ := os.UserHomeDir()
	fs.StringVar(&o.magnetar, "magnetar", "bin/magnetar", "the magnetar binary to test")
	fs.StringVar(&o.version, "version", "v0.19.0", "pulsar-client-go version whose tests run")
	fs.StringVar(&o.out, "out", "/tmp/magnetar-compat/go", "directory for logs, data and results")
	fs.StringVar(&o.cache, "cache", filepath.Join(home, ".cache", "magnetar-compat"), "cache of the fetched client source and test binaries")
	fs.StringVar(&o.run, "run", "", "only tests whose name matches this regexp")
	fs.Var(&o.only, "only", "suite=regexp: only that suite's tests matching it (repeatable; overrides -run for the suite)")
	suiteList := fs.String("suites", "pulsar,admin,clustered", "suites to run: pulsar, admin, clustered, python, python-official, java, spring, quarkus")
	fs.StringVar(&o.repo, "repo", ".", "the magnetar repository (for tests/compat/python and tests/compat/java)")
	fs.DurationVar(&o.limit, "timeout", 5*time.Minute, "time limit of each test")
	fs.BoolVar(&o.race, "race", false, "build the tests with -race (as the client's CI does; slower)")
	fs.Var(&o.env, "env", "KEY=VALUE for the server's environment (repeatable), e.g. a PULSAR_PREFIX_ override")
	fs.BoolVar(&o.noSecurity, "no-security", false, "turn the CI config's TLS and authentication off through the environment (for builds without them)")
	prepJSON := fs.String("prepare-errors", "", "(internal) what failed to prepare, for the inner run")
	fs.StringVar(&o.pythonSrc, "python-src", os.Getenv("PULSAR_CLIENT_PYTHON_SRC"), "checkout of apache/pulsar-client-python whose tests/ the python-official suite runs (default: cloned into the cache)")
	fs.StringVar(&o.pythonClient, "python-client", "3.13.0", "pulsar-client version from PyPI for the Python suites")
	rejudge := fs.Bool("rejudge", false, "only read the logs of the last run under -out again and rewrite its results (no tests run)")
	fs.StringVar(&o.conf, "conf", "/pulsar/conf/standalone.conf", "standalone's --config (the client CI's, staged under /pulsar)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	o.suites = strings.Split(*suiteList, ",")
	abs, err := filepath.Abs(o.magnetar)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	o.magnetar = abs
	if o.repo, err = filepath.Abs(o.repo); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if *prepJSON != "" {
		_ = json.Unmarshal([]byte(*prepJSON), &prepErrs)
	}
	if *rejudge {
		return rejudgeResults(o)
	}
	if os.Getenv(innerEnv) == "1" {
		return inner(ctx, o)
	}
	return outer(o, args)
}

// outer prepares everything that needs the network (module proxy) and re-runs itself in the
// namespaces, where there is none.
func outer(o options, args []string) int {
	if _, err := os.Stat(o.magnetar); err != nil {
		fmt.Fprintf(os.Stderr, "magnetar binary: %v (make build)\n", err)
		return 2
	}
	for _, s := range selected(o) {
		fmt.Fprintf(os.Stderr, "preparing suite %s\n", s.Name)
		if err := s.kind.prepare(o, s); err != nil {
			// The suite still runs: its list step reports the failure, so the table says
			// why instead of the run stopping here.
			fmt.Fprintf(os.Stderr, "suite %s: %v\n", s.Name, err)
			prepErrs[s.Name] = err.Error()
		}
	}
	if err := stage(o); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if len(prepErrs) > 0 {
		b, _ := json.Marshal(prepErrs)
		args = append([]string{"-prepare-errors", string(b)}, args...)
	}
	if err := inNamespaces(args); err != nil {
		if ee, ok := err.(interface{ ExitCode() int }); ok {
			return ee.ExitCode()
		}
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// stage lays out what the namespace's /pulsar holds: the Go client's integration-tests
// files as its CI image has them (Dockerfile: COPY integration-tests/certs /pulsar/certs,
// ...) and, for the Python client's suite, its test-conf as its CI container has it.
func stage(o options) error {
	root := filepath.Join(o.out, "stage", "pulsar")
	if err := os.RemoveAll(root); err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Join(root, "conf"), 0o755); err != nil {
		return err
	}
	src, err := fetchClient(o.version, o.cache)
	if err != nil {
		return err
	}
	it := filepath.Join(src, "integration-tests")
	for _, d := range []string{"certs", "tokens"} {
		if err := stageTree(root, filepath.Join(it, d), d); err != nil {
			return err
		}
	}
	for _, f := range []string{".htpasswd", "client.conf", "standalone.conf"} {
		b, err := os.ReadFile(filepath.Join(it, "conf", f))
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(root, "conf", f), b, 0o644); err != nil {
			return err
		}
	}
	for _, s := range selected(o) {
		if s.Name != "python-official" || prepErrs[s.Name] != "" {
			continue
		}
		if err := stageTree(root, filepath.Join(pythonTestsDir(o), "test-conf"), "test-conf"); err != nil {
			return err
		}
		if err := stagePythonTokens(o, root); err != nil {
			return err
		}
	}
	return nil
}

// serverEnv is the environment pulsar-test-service-start.sh and the Dockerfile give Pulsar.
func serverEnv(o options, s *suite) []string {
	env := []string{
		"PULSAR_MEM=-Xms1g -Xmx1g -XX:MaxDirectMemorySize=1g",
		"PULSAR_STANDALONE_USE_ZOOKEEPER=1",
		"PULSAR_EXTRA_OPTS=-Dpulsar.auth.basic.conf=/pulsar/conf/.htpasswd",
	}
	if s.Name == "python-official" {
		// build-support/start-test-service-inside-container.sh (cwd /pulsar)
		env = []string{"PULSAR_EXTRA_OPTS=-Dpulsar.auth.basic.conf=test-conf/.htpasswd"}
	}
	if o.noSecurity {
		env = append(env, "tlsEnabled=false", "authenticationEnabled=false", "authorizationEnabled=false",
			"brokerServicePortTls=", "webServicePortTls=")
	}
	return append(env, o.env...)
}

func inner(ctx context.Context, o options) int {
	if err := setupNamespaces(filepath.Join(o.out, "stage")); err != nil {
		fmt.Fprintln(os.Stderr, "namespaces:", err)
		return 1
	}
	var all []result
	tw := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', 0)
	progress := func(r result) {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%.1fs\t%s\n", r.Suite, r.Test, r.Outcome, r.Seconds, oneLine(r.Reason, 160))
		_ = tw.Flush()
	}
	for _, s := range selected(o) {
		if msg, ok := prepErrs[s.Name]; ok {
			r := result{Suite: s.Name, Test: "(prepare)", Outcome: failed, Reason: msg}
			progress(r)
			all = append(all, r)
			continue
		}
		names, err := s.kind.list(o, s)
		if err != nil {
			r := result{Suite: s.Name, Test: "(list)", Outcome: failed, Reason: err.Error()}
			progress(r)
			all = append(all, r)
			continue
		}
		if len(names) == 0 {
			continue
		}
		dir := filepath.Join(o.out, s.Name)
		_ = os.RemoveAll(dir)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		var srv server
		if s.Cluster {
			srv = &cluster{bin: o.magnetar, dir: dir, env: o.env}
		} else {
			conf := s.Conf
			if s.Name == "pulsar" || s.Name == "admin" {
				conf = o.conf
			}
			st := &standalone{bin: o.magnetar, dir: dir, env: serverEnv(o, s), conf: conf, cwd: s.Dir, setup: s.setup}
			if cc := "/pulsar/conf/client.conf"; !o.noSecurity && s.Conf == goCIConf {
				if _, err := os.Stat(cc); err == nil {
					st.clientConf = cc
				}
			}
			if s.Dir != "" {
				st.data = filepath.Join(s.Dir, "data", "standalone")
			}
			srv = st
		}
		fmt.Fprintf(os.Stderr, "suite %s: %d tests; starting the server (log %s)\n", s.Name, len(names), srv.Log())
		if err := srv.Start(ctx); err != nil {
			fmt.Fprintf(os.Stderr, "suite %s: %v\n", s.Name, err)
			for _, n := range names {
				all = append(all, result{Suite: s.Name, Test: n, Outcome: failed, Reason: "server did not start"})
			}
			srv.Stop()
			continue
		}
		all = append(all, s.kind.run(ctx, o, s, names, filepath.Join(dir, "logs"), srv, progress)...)
		srv.Stop()
	}
	return report(o, all)
}

// rejudgeResults reads results.json of the last run and the tests' logs again (after a
// change to judge) and rewrites the results.
func rejudgeResults(o options) int {
	b, err := os.ReadFile(filepath.Join(o.out, "results.json"))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	var all []result
	if err := json.Unmarshal(b, &all); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	for i, r := range all {
		if r.Log == "" || r.Outcome == excluded {
			continue
		}
		var runErr error
		if r.Outcome != passed && r.Outcome != skipped {
			runErr = fmt.Errorf("exit status 1")
		}
		died := r.ServerDied
		all[i].Outcome, all[i].Reason = judge(r.Log, r.Test, runErr)
		if died {
			all[i].Reason += " [server unhealthy after the test; restarted]"
		}
	}
	return report(o, all)
}

func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > n {
		s = s[:n] + "..."
	}
	return s
}

// report prints the summary and writes results.json and results.md under -out.
func report(o options, all []result) int {
	counts := map[string]int{}
	for _, r := range all {
		counts[r.Outcome]++
	}
	b, _ := json.MarshalIndent(all, "", "  ")
	_ = os.WriteFile(filepath.Join(o.out, "results.json"), b, 0o644)
	var md strings.Builder
	fmt.Fprintf(&md, "| suite | test | outcome | seconds | reason |\n|---|---|---|---|---|\n")
	sorted := append([]result(nil), all...)
	sort.SliceStable(sorted, func(i, j int) bool { return sorted[i].Suite < sorted[j].Suite })
	for _, r := range sorted {
		fmt.Fprintf(&md, "| %s | %s | %s | %.1f | %s |\n", r.Suite, r.Test, r.Outcome, r.Seconds, strings.ReplaceAll(oneLine(r.Reason, 200), "|", "\\|"))
	}
	_ = os.WriteFile(filepath.Join(o.out, "results.md"), []byte(md.String()), 0o644)
	fmt.Printf("\nresults: %s\n", filepath.Join(o.out, "results.md"))
	fmt.Printf("excluded %d, skipped %d, timeout %d\n", counts[excluded], counts[skipped], counts[timedout])
	fmt.Printf("%d passed, %d failed\n", counts[passed], counts[failed]+counts[timedout])
	if counts[failed]+counts[timedout] > 0 {
		return 1
	}
	return 0
}
