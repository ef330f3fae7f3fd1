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
	env                                listFlag
	noSecurity                         bool
	conf                               string
}

type listFlag []string

func (l *listFlag) String() string     { return strings.Join(*l, " ") }
func (l *listFlag) Set(s string) error { *l = append(*l, s); return nil }

func main() { os.Exit(run(os.Args[1:])) }

func run(args []string) int {
	var o options
	fs := flag.NewFlagSet("gosuite", flag.ContinueOnError)
	home, _ := os.UserHomeDir()
	fs.StringVar(&o.magnetar, "magnetar", "bin/magnetar", "the magnetar binary to test")
	fs.StringVar(&o.version, "version", "v0.19.0", "pulsar-client-go version whose tests run")
	fs.StringVar(&o.out, "out", "/tmp/magnetar-compat/go", "directory for logs, data and results")
	fs.StringVar(&o.cache, "cache", filepath.Join(home, ".cache", "magnetar-compat"), "cache of the fetched client source and test binaries")
	fs.StringVar(&o.run, "run", "", "only tests whose name matches this regexp")
	suiteList := fs.String("suites", "pulsar,admin,clustered", "suites to run: pulsar, admin, clustered")
	fs.DurationVar(&o.limit, "timeout", 5*time.Minute, "time limit of each test")
	fs.BoolVar(&o.race, "race", false, "build the tests with -race (as the client's CI does; slower)")
	fs.Var(&o.env, "env", "KEY=VALUE for the server's environment (repeatable), e.g. a PULSAR_PREFIX_ override")
	fs.BoolVar(&o.noSecurity, "no-security", false, "turn the CI config's TLS and authentication off through the environment (for builds without them)")
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
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
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
	src, err := fetchClient(o.version, o.cache)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	bin := filepath.Join(o.cache, "bin-"+o.version)
	if o.race {
		bin += "-race"
	}
	for _, s := range selected(o) {
		fmt.Fprintf(os.Stderr, "building %s tests (%s)\n", s.Name, s.Pkg)
		if _, err := buildSuite(src, bin, s, o.race); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
	}
	if err := stage(src, o.out); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
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

func selected(o options) []suite {
	var out []suite
	for _, s := range suites {
		for _, name := range o.suites {
			if s.Name == strings.TrimSpace(name) {
				out = append(out, s)
			}
		}
	}
	return out
}

// stage lays out the client's integration-tests files as its CI image has them under
// /pulsar (Dockerfile: COPY integration-tests/certs /pulsar/certs, ...).
func stage(src, out string) error {
	root := filepath.Join(out, "stage", "pulsar")
	if err := os.RemoveAll(root); err != nil {
		return err
	}
	it := filepath.Join(src, "integration-tests")
	for _, c := range [][2]string{{"certs", "certs"}, {"tokens", "tokens"}} {
		if err := copyTree(filepath.Join(it, c[0]), filepath.Join(root, c[1])); err != nil {
			return err
		}
	}
	if err := os.MkdirAll(filepath.Join(root, "conf"), 0o755); err != nil {
		return err
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
	return nil
}

// serverEnv is the environment pulsar-test-service-start.sh and the Dockerfile give Pulsar.
func serverEnv(o options) []string {
	env := []string{
		"PULSAR_MEM=-Xms1g -Xmx1g -XX:MaxDirectMemorySize=1g",
		"PULSAR_STANDALONE_USE_ZOOKEEPER=1",
		"PULSAR_EXTRA_OPTS=-Dpulsar.auth.basic.conf=/pulsar/conf/.htpasswd",
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
	src, err := fetchClient(o.version, o.cache) // already there: outer fetched it
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	bin := filepath.Join(o.cache, "bin-"+o.version)
	if o.race {
		bin += "-race"
	}
	var all []result
	tw := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', 0)
	progress := func(r result) {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%.1fs\t%s\n", r.Suite, r.Test, r.Outcome, r.Seconds, oneLine(r.Reason, 160))
		_ = tw.Flush()
	}
	for _, s := range selected(o) {
		binary := filepath.Join(bin, s.Name+".test")
		names, err := listTests(binary, s, o.run)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
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
			srv = &standalone{bin: o.magnetar, dir: dir, env: serverEnv(o), conf: o.conf}
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
		all = append(all, runSuite(ctx, s, binary, src, filepath.Join(dir, "logs"), names, srv, o.limit, progress)...)
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
