package testenv

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// PythonVenv returns the python of a virtualenv under ~/.cache/magnetar-<what>/<name> with
// pkgs (pip requirement strings) installed from PyPI, making it the first time (a minute or
// more). name must change when pkgs change. A file lock keeps test processes from
// installing at once; an install that cannot happen fails the test with pip's output.
func PythonVenv(tb testing.TB, what, name string, pkgs ...string) string {
	tb.Helper()
	root, err := CacheDir(what)
	if err != nil {
		tb.Fatal(err)
	}
	dir := filepath.Join(root, name)
	python := filepath.Join(dir, "bin", "python")
	ready := filepath.Join(dir, ".ready")
	if _, err := os.Stat(ready); err == nil {
		return python
	}
	unlock, err := lockDir(root)
	if err != nil {
		tb.Fatal(err)
	}
	defer unlock()
	if _, err := os.Stat(ready); err == nil {
		return python
	}
	tb.Logf("testenv: installing %v into %s (once)", pkgs, dir)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	run := func(name string, args ...string) {
		var out bytes.Buffer
		cmd := exec.CommandContext(ctx, name, args...)
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Run(); err != nil {
			tb.Fatalf("testenv: %s %v failed (python3 with venv and PyPI must be reachable): %v\n%s", name, args, err, tail(out.String(), 4000))
		}
	}
	_ = os.RemoveAll(dir)
	run("python3", "-m", "venv", dir)
	run(python, append([]string{"-m", "pip", "install", "-q", "--disable-pip-version-check"}, pkgs...)...)
	if err := os.WriteFile(ready, nil, 0o644); err != nil {
		tb.Fatal(err)
	}
	return python
}
