package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/magnetar-io/magnetar/internal/metadata"
	"github.com/magnetar-io/magnetar/internal/metadata/etcdstore"
)

// TestMetadataHelperProcess is not a test: the role test below re-executes the test binary
// with MAGNETAR_METADATA_HELPER=1 to run `magnetar <args>` as a real child process.
func TestMetadataHelperProcess(t *testing.T) {
	if os.Getenv("MAGNETAR_METADATA_HELPER") != "1" {
		t.Skip("helper process for TestMetadataRoleProcess")
	}
	args := os.Args
	for i, a := range args {
		if a == "--" {
			args = args[i+1:]
			break
		}
	}
	os.Exit(Main(args))
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func freeLoopbackPorts(t *testing.T, n int) []int {
	t.Helper()
	var ports []int
	var ls []net.Listener
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	for _, l := range ls {
		_ = l.Close()
	}
	return ports
}

// TestMetadataRoleProcess runs `magnetar metadata` as a process, writes and reads through it,
// and stops it with SIGTERM.
func TestMetadataRoleProcess(t *testing.T) {
	ports := freeLoopbackPorts(t, 2)
	client := fmt.Sprintf("http://127.0.0.1:%d", ports[0])
	cmd := exec.Command(os.Args[0], "-test.run=^TestMetadataHelperProcess$", "--",
		"metadata", "--name", "solo", "--data-dir", filepath.Join(t.TempDir(), "m"),
		"--listen-client", client, "--listen-peer", fmt.Sprintf("http://127.0.0.1:%d", ports[1]))
	cmd.Env = append(os.Environ(), "MAGNETAR_METADATA_HELPER=1")
	var stderr syncBuffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	defer func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			<-exited
		}
	}()

	ctx := context.Background()
	logger := slog.New(slog.NewTextHandler(&stderr, &slog.HandlerOptions{Level: slog.LevelError}))
	var s *etcdstore.Store
	deadline := time.Now().Add(30 * time.Second)
	for {
		var err error
		s, err = etcdstore.Open(ctx, etcdstore.Options{Endpoints: []string{client}, DialTimeout: time.Second}, logger)
		if err == nil {
			break
		}
		select {
		case err := <-exited:
			t.Fatalf("metadata process exited: %v\n%s", err, stderr.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("metadata process not answering after 30s: %v\n%s", err, stderr.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	if _, err := s.Put(ctx, "/role/k", []byte("v"), metadata.NotExists); err != nil {
		t.Fatal(err)
	}
	if kv, err := s.Get(ctx, "/role/k"); err != nil || string(kv.Value) != "v" {
		t.Fatalf("Get: %v %v", kv, err)
	}
	_ = s.Close()

	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-exited:
		var ee *exec.ExitError
		if err != nil && !errors.As(err, &ee) {
			t.Fatal(err)
		}
		if err != nil {
			t.Fatalf("exit after SIGTERM: %v\n%s", err, stderr.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("no exit 30s after SIGTERM\n%s", stderr.String())
	}
	if !strings.Contains(stderr.String(), "metadata member ready") {
		t.Errorf("no readiness log line:\n%s", stderr.String())
	}
}

func TestMetadataBadConfigExit2(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--initial-cluster-state=old"}, "metadataInitialClusterState"},
		{[]string{"--name", "a", "--initial-cluster", "b=http://127.0.0.1:1"}, "metadataInitialCluster"},
		{[]string{"--listen-client", "127.0.0.1:2379"}, "metadataListenClient"},
		{[]string{"--election-timeout", "10ms"}, "metadataElectionTimeout"},
	} {
		code, _, errOut := run(t, nil, append([]string{"metadata", "--data-dir", t.TempDir()}, tc.args...)...)
		if code != 2 || !strings.Contains(errOut, tc.want) {
			t.Errorf("%v: exit %d, %q; want 2 naming %s", tc.args, code, errOut, tc.want)
		}
	}
}
