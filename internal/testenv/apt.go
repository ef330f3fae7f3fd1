package testenv

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

var aptMu sync.Mutex

// DebianProgram returns the path of a program from a Debian package, installing the
// packages with apt-get (apt-get update first) when the program is missing. Installs never
// start the packages' services (policy-rc.d denies them, as in a container; a service left
// running would hold a default port). A file lock keeps test processes of several packages
// from running apt-get at once. When apt-get cannot install, the test fails with the
// command's output; it never skips.
func DebianProgram(tb testing.TB, program string, packages ...string) string {
	tb.Helper()
	if p := findProgram(program); p != "" {
		return p
	}
	aptMu.Lock()
	defer aptMu.Unlock()
	root, err := CacheDir("apt")
	if err != nil {
		tb.Fatal(err)
	}
	unlock, err := lockDir(root)
	if err != nil {
		tb.Fatal(err)
	}
	defer unlock()
	if p := findProgram(program); p != "" {
		return p
	}
	tb.Logf("testenv: installing %s from Debian (apt-get, once)", strings.Join(packages, " "))
	if err := aptInstall(packages...); err != nil {
		tb.Fatalf("testenv: %s is needed and could not be installed: %v", program, err)
	}
	p := findProgram(program)
	if p == "" {
		tb.Fatalf("testenv: installed %s but %s is still not found", strings.Join(packages, " "), program)
	}
	return p
}

// findProgram looks on PATH and in the places Debian packages put server binaries.
func findProgram(program string) string {
	if filepath.IsAbs(program) {
		if _, err := os.Stat(program); err == nil {
			return program
		}
		return ""
	}
	if p, err := exec.LookPath(program); err == nil {
		return p
	}
	for _, dir := range []string{"/usr/sbin", "/usr/lib/postgresql/15/bin"} {
		if p := filepath.Join(dir, program); fileExists(p) {
			return p
		}
	}
	return ""
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

func aptInstall(packages ...string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	// Services must not start: without a policy-rc.d a package's postinst would start
	// its server on the default port.
	const policy = "/usr/sbin/policy-rc.d"
	if !fileExists(policy) {
		if err := os.WriteFile(policy, []byte("#!/bin/sh\nexit 101\n"), 0o755); err == nil {
			defer os.Remove(policy)
		}
	}
	run := func(args ...string) error {
		cmd := exec.CommandContext(ctx, "apt-get", args...)
		cmd.Env = append(os.Environ(), "DEBIAN_FRONTEND=noninteractive")
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("apt-get %s: %w\n%s", strings.Join(args, " "), err, tail(out.String(), 4000))
		}
		return nil
	}
	if err := run("update", "-qq"); err != nil {
		return err
	}
	return run(append([]string{"install", "-y", "-qq", "--no-install-recommends"}, packages...)...)
}

// chownTree gives dir and everything below it to the user (servers that refuse to run as
// root run as their Debian user).
func chownTree(dir string, uid, gid int) error {
	return filepath.Walk(dir, func(p string, _ os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(p, uid, gid)
	})
}
