package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// clientModule is the official Go client whose own tests are the suite.
const clientModule = "github.com/apache/pulsar-client-go"

// fetchClient downloads the client module at version from the module proxy and returns a
// writable copy of its tree under cache. The copy is made once per version.
func fetchClient(version, cache string) (string, error) {
	dst := filepath.Join(cache, "pulsar-client-go@"+version)
	if _, err := os.Stat(filepath.Join(dst, ".complete")); err == nil {
		return dst, nil
	}
	cmd := exec.Command("go", "mod", "download", "-json", clientModule+"@"+version)
	cmd.Dir = os.TempDir() // outside any module: only the proxy decides
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=")
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("go mod download %s@%s: %w", clientModule, version, err)
	}
	var info struct{ Dir, Error string }
	if err := json.Unmarshal(out, &info); err != nil {
		return "", fmt.Errorf("go mod download: %w", err)
	}
	if info.Error != "" || info.Dir == "" {
		return "", fmt.Errorf("go mod download %s@%s: %s", clientModule, version, info.Error)
	}
	if err := os.RemoveAll(dst); err != nil {
		return "", err
	}
	if err := copyTree(info.Dir, dst); err != nil {
		return "", fmt.Errorf("copy %s: %w", info.Dir, err)
	}
	return dst, os.WriteFile(filepath.Join(dst, ".complete"), []byte(version+"\n"), 0o644)
}

// copyTree copies regular files and directories, making them writable by the owner.
func copyTree(src, dst string) error {
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		to := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(to, 0o755)
		}
		if !d.Type().IsRegular() {
			return nil
		}
		in, err := os.Open(p)
		if err != nil {
			return err
		}
		defer in.Close()
		out, err := os.OpenFile(to, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
		if err != nil {
			return err
		}
		if _, err := io.Copy(out, in); err != nil {
			_ = out.Close()
			return err
		}
		return out.Close()
	})
}

// goKind runs a package of the Go client: its test binary, one process per top-level test.
type goKind struct {
	Pkg  string // package directory inside the module
	Tags string // build tags ("" for none)
	// Run filters the binary's top-level tests (the client CI's own -run for clustered).
	Run string
}

// binDir is where the test binaries of a client version are kept.
func binDir(o options) string {
	d := filepath.Join(o.cache, "bin-"+o.version)
	if o.race {
		d += "-race"
	}
	return d
}

// prepare fetches the client and compiles the suite's test binary (the Go build cache makes
// a rebuild of an unchanged package cheap).
func (k *goKind) prepare(o options, s *suite) error {
	src, err := fetchClient(o.version, o.cache)
	if err != nil {
		return err
	}
	out := filepath.Join(binDir(o), s.Name+".test")
	args := []string{"test", "-c", "-o", out}
	if o.race {
		args = append(args, "-race")
	}
	if k.Tags != "" {
		args = append(args, "-tags", k.Tags)
	}
	args = append(args, "./"+k.Pkg)
	cmd := exec.Command("go", args...)
	cmd.Dir = src
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=mod")
	if o.race {
		cmd.Env = append(cmd.Env, "CGO_ENABLED=1")
	}
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("go %s (in %s): %w", strings.Join(args, " "), src, err)
	}
	return nil
}

// list returns the binary's top-level tests matching the suite's filter and -run.
func (k *goKind) list(o options, s *suite) ([]string, error) {
	binary := filepath.Join(binDir(o), s.Name+".test")
	pattern := "^Test"
	if k.Run != "" {
		pattern = k.Run
	}
	out, err := exec.Command(binary, "-test.list", pattern).Output()
	if err != nil {
		return nil, fmt.Errorf("%s -test.list: %w", binary, err)
	}
	var names []string
	for _, l := range strings.Split(string(out), "\n") {
		l = strings.TrimSpace(l)
		if f := o.filter(s.Name); strings.HasPrefix(l, "Test") && (f == "" || matches(f, l)) {
			names = append(names, l)
		}
	}
	return names, nil
}

// run runs each test in the package's directory (the tests read ../integration-tests/...).
func (k *goKind) run(ctx context.Context, o options, s *suite, names []string, logs string, srv server, progress func(result)) []result {
	src, err := fetchClient(o.version, o.cache)
	if err != nil {
		return []result{{Suite: s.Name, Test: "(setup)", Outcome: failed, Reason: err.Error()}}
	}
	binary := filepath.Join(binDir(o), s.Name+".test")
	dir := filepath.Join(src, k.Pkg)
	return eachTest(ctx, s.Name, logs, names, srv, progress, func(ctx context.Context, name, logPath string) result {
		return runTest(ctx, binary, dir, name, o.limit, logPath, nil)
	})
}
