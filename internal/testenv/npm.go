package testenv

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// NpmPackage installs spec (e.g. "kafkajs@2.2.4") with npm into
// ~/.cache/magnetar-npm/<name> once and returns that directory (its node_modules holds
// the package).
func NpmPackage(tb testing.TB, name, spec string) string {
	tb.Helper()
	root, err := CacheDir("npm")
	if err != nil {
		tb.Fatal(err)
	}
	dir := filepath.Join(root, name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		tb.Fatal(err)
	}
	unlock, err := lockDir(dir)
	if err != nil {
		tb.Fatal(err)
	}
	defer unlock()
	if done, err := os.ReadFile(filepath.Join(dir, "done")); err == nil && string(done) == spec {
		return dir
	}
	if _, err := exec.LookPath("npm"); err != nil {
		tb.Fatalf("testenv: npm is not installed (Debian: apt-get install -y npm): %v", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "package.json"), []byte(`{"name":"magnetar-testenv-`+sanitize(name)+`","private":true}`), 0o644); err != nil {
		tb.Fatal(err)
	}
	cmd := exec.Command("npm", "install", "--no-audit", "--no-fund", "--loglevel=error", spec)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		tb.Fatalf("testenv: npm install %s: %v\n%s", spec, err, tail(string(out), 4000))
	}
	if err := os.WriteFile(filepath.Join(dir, "done"), []byte(spec), 0o644); err != nil {
		tb.Fatal(err)
	}
	return dir
}

// RunNode runs a JavaScript program with node, resolving modules from pkgDir's
// node_modules, and returns its combined output.
func RunNode(ctx context.Context, pkgDir, script string, env ...string) (string, error) {
	bin, err := exec.LookPath("node")
	if err != nil {
		return "", fmt.Errorf("node is not installed (Debian: apt-get install -y nodejs): %w", err)
	}
	tmp, err := os.CreateTemp(pkgDir, "script-*.js")
	if err != nil {
		return "", err
	}
	f := tmp.Name()
	defer os.Remove(f)
	if _, err := tmp.WriteString(script); err != nil {
		tmp.Close()
		return "", err
	}
	if err := tmp.Close(); err != nil {
		return "", err
	}
	cmd := exec.CommandContext(ctx, bin, f)
	cmd.Dir = pkgDir
	cmd.Env = append(append(os.Environ(), "NODE_PATH="+filepath.Join(pkgDir, "node_modules")), env...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err = cmd.Run()
	if err != nil {
		return out.String(), fmt.Errorf("node: %w\n%s", err, strings.TrimSpace(tail(out.String(), 4000)))
	}
	return out.String(), nil
}
