package testenv

import (
	"context"
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// HadoopVersion is the Hadoop release whose MiniDFSCluster StartHDFS runs.
const HadoopVersion = "3.4.1"

//go:embed javasrc/MiniHDFS.java
var miniHDFSSource []byte

// HDFSCluster is a running namenode and datanode (Hadoop's MiniDFSCluster).
type HDFSCluster struct {
	URI  string // hdfs://127.0.0.1:port
	Proc *Process
}

// StartHDFS starts a real HDFS namenode and datanode in one JVM on loopback ports chosen
// at run time, with their data in a temporary directory; it is stopped when the test ends.
// The first call fetches hadoop-client-minicluster and its dependencies from Maven Central
// into ~/.cache/magnetar-hadoop/<version> (about 90 MB, a minute) and compiles
// javasrc/MiniHDFS.java there; later calls find both in place. It fails, never skips, when
// Java, javac or Maven is missing.
func StartHDFS(t testing.TB) *HDFSCluster {
	t.Helper()
	cp, err := hadoopClasspath()
	if err != nil {
		t.Fatalf("testenv: HDFS: %v", err)
	}
	data := filepath.Join(t.TempDir(), "hdfs")
	p := StartJava(t, cp, "MiniHDFS", []string{data}, JavaOptions{Heap: "512m"})
	const ready = "MAGNETAR-HDFS-READY "
	deadline := time.Now().Add(3 * time.Minute)
	for {
		out := p.Output()
		if i := strings.Index(out, ready); i >= 0 {
			uri, _, _ := strings.Cut(out[i+len(ready):], "\n")
			return &HDFSCluster{URI: strings.TrimSpace(uri), Proc: p}
		}
		if exited, err := p.Exited(); exited {
			t.Fatalf("testenv: MiniHDFS exited (%v) before it was ready:\n%s", err, tail(out, 4000))
		}
		if time.Now().After(deadline) {
			t.Fatalf("testenv: MiniHDFS not ready after 3 minutes:\n%s", tail(out, 4000))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// hadoopClasspath fetches the jars and compiles MiniHDFS (again when its source changed).
func hadoopClasspath() ([]string, error) {
	root, err := CacheDir("hadoop")
	if err != nil {
		return nil, err
	}
	dir := filepath.Join(root, HadoopVersion)
	jars, err := fetchMavenInto(dir, "hadoop-"+HadoopVersion, "org.apache.hadoop:hadoop-client-minicluster:"+HadoopVersion)
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256(miniHDFSSource)
	classes := filepath.Join(dir, "classes-"+hex.EncodeToString(sum[:8]))
	if _, err := os.Stat(filepath.Join(classes, "MiniHDFS.class")); err == nil {
		return append([]string{classes}, jars...), nil
	}
	javac := "javac"
	if h := os.Getenv("JAVA_HOME"); h != "" {
		javac = filepath.Join(h, "bin", "javac")
	}
	if _, err := exec.LookPath(javac); err != nil {
		return nil, fmt.Errorf("javac is not installed (Debian: apt-get install -y openjdk-17-jdk-headless): %w", err)
	}
	src := filepath.Join(dir, "src")
	if err := os.MkdirAll(src, 0o755); err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(src, "MiniHDFS.java"), miniHDFSSource, 0o644); err != nil {
		return nil, err
	}
	// Compile into a temporary directory renamed into place: a concurrent test process
	// never sees half a class directory.
	tmp, err := os.MkdirTemp(dir, "classes-tmp-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, javac, "-cp", strings.Join(jars, ":"), "-d", tmp, filepath.Join(src, "MiniHDFS.java"))
	if out, err := cmd.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("compiling MiniHDFS: %w\n%s", err, out)
	}
	if err := os.Rename(tmp, classes); err != nil && !os.IsExist(err) {
		if _, serr := os.Stat(filepath.Join(classes, "MiniHDFS.class")); serr != nil {
			return nil, err
		}
	}
	return append([]string{classes}, jars...), nil
}
