package main

import (
	"context"
	"encoding/xml"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"
)

// mavenKind runs a Maven module of ours (tests/compat/<Module>) whose tests use the official
// Java client, admin and frameworks from Maven Central: Maven resolves everything before the
// namespaces (into ~/.cache/magnetar-maven), then runs offline inside, once, and each
// JUnit test case becomes a row from the Surefire reports.
type mavenKind struct {
	Module string
	// Pre are Maven runs of prepare before the module's own (pulsar-perf's classpath).
	Pre [][]string
}

func (k *mavenKind) dir(o options) string { return filepath.Join(o.repo, "tests", "compat", k.Module) }

func mavenRepo() string {
	home, _ := os.UserHomeDir()
	return filepath.Join(home, ".cache", "magnetar-maven")
}

func (k *mavenKind) mvn(ctx context.Context, o options, logPath string, args ...string) error {
	full := append([]string{"-B", "-s", filepath.Join(o.repo, "tests", "compat", "maven-settings.xml"),
		"-Dmaven.repo.local=" + mavenRepo(), "-Dstyle.color=never"}, args...)
	cmd := exec.CommandContext(ctx, "mvn", full...)
	cmd.Dir = k.dir(o)
	if logPath != "" {
		f, err := os.Create(logPath)
		if err != nil {
			return err
		}
		defer f.Close()
		cmd.Stdout, cmd.Stderr = f, f
	} else {
		cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("mvn %s (in %s): %w", strings.Join(args, " "), cmd.Dir, err)
	}
	return nil
}

// prepare resolves and compiles everything, and runs the module's PrepareTest (no server
// needed): Surefire resolves its JUnit provider only when a test runs.
func (k *mavenKind) prepare(o options, s *suite) error {
	if _, err := exec.LookPath("mvn"); err != nil {
		return fmt.Errorf("mvn not found: install Maven (apt-get install -y maven) and a JDK 17")
	}
	for _, pre := range k.Pre {
		if err := k.mvn(context.Background(), o, "", append([]string{"-q"}, pre...)...); err != nil {
			return err
		}
	}
	return k.mvn(context.Background(), o, "", "-q", "test", "-Dtest=PrepareTest")
}

// list has one entry: Maven runs the module's tests in one JVM; run reports each case.
func (k *mavenKind) list(o options, s *suite) ([]string, error) { return []string{"(maven)"}, nil }

func (k *mavenKind) run(ctx context.Context, o options, s *suite, _ []string, logs string, srv server, progress func(result)) []result {
	if err := os.MkdirAll(logs, 0o755); err != nil {
		return []result{{Suite: s.Name, Test: "(setup)", Outcome: failed, Reason: err.Error()}}
	}
	reports := filepath.Join(k.dir(o), "target", "surefire-reports")
	_ = os.RemoveAll(reports)
	logPath := filepath.Join(logs, "mvn-test.log")
	args := []string{"-o", "test", "-Dsurefire.failIfNoSpecifiedTests=false"}
	if f := o.filter(s.Name); f != "" {
		args = append(args, "-Dtest="+f) // Surefire's syntax: Class#method patterns
	}
	ctx, cancel := context.WithTimeout(ctx, 8*o.limit)
	defer cancel()
	start := time.Now()
	runErr := k.mvn(ctx, o, logPath, args...)
	out := parseSurefire(s.Name, reports, logPath)
	if len(out) == 0 {
		reason := "no Surefire report"
		if runErr != nil {
			reason = runErr.Error() + ": " + lastLines(mavenErrors(logPath), 5)
		}
		out = []result{{Suite: s.Name, Test: "(maven)", Outcome: failed, Reason: reason, Log: logPath,
			Seconds: time.Since(start).Seconds()}}
	}
	for _, r := range out {
		progress(r)
	}
	return out
}

type surefireSuite struct {
	Cases []struct {
		Class   string  `xml:"classname,attr"`
		Name    string  `xml:"name,attr"`
		Time    float64 `xml:"time,attr"`
		Failure *struct {
			Message string `xml:"message,attr"`
			Type    string `xml:"type,attr"`
		} `xml:"failure"`
		Error *struct {
			Message string `xml:"message,attr"`
			Type    string `xml:"type,attr"`
		} `xml:"error"`
		Skipped *struct {
			Message string `xml:"message,attr"`
		} `xml:"skipped"`
	} `xml:"testcase"`
}

// parseSurefire turns TEST-*.xml reports into results, one per test case.
func parseSurefire(suiteName, dir, logPath string) []result {
	files, _ := filepath.Glob(filepath.Join(dir, "TEST-*.xml"))
	sort.Strings(files)
	var out []result
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		var ss surefireSuite
		if xml.Unmarshal(b, &ss) != nil {
			continue
		}
		for _, c := range ss.Cases {
			r := result{Suite: suiteName, Test: c.Class[strings.LastIndex(c.Class, ".")+1:] + "." + c.Name,
				Seconds: c.Time, Outcome: passed, Log: logPath}
			switch {
			case c.Failure != nil:
				r.Outcome, r.Reason = failed, strings.TrimSpace(c.Failure.Type+": "+c.Failure.Message)
			case c.Error != nil:
				r.Outcome, r.Reason = failed, strings.TrimSpace(c.Error.Type+": "+c.Error.Message)
			case c.Skipped != nil:
				r.Outcome, r.Reason = skipped, c.Skipped.Message
			}
			out = append(out, r)
		}
	}
	return out
}

// mavenErrors keeps Maven's [ERROR] lines of a log.
func mavenErrors(logPath string) string {
	b, _ := os.ReadFile(logPath)
	var keep []string
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, "[ERROR]") {
			keep = append(keep, l)
		}
	}
	return strings.Join(keep, "\n")
}
