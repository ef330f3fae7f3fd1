package e2e

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/magnetar-io/magnetar/internal/standalone"
	"github.com/magnetar-io/magnetar/internal/wire"
	"github.com/magnetar-io/magnetar/internal/wire/pb"
)

// TestStandaloneAsTheImageRunsIt runs the Dockerfile's command (`standalone --data-dir
// /data`, here a temporary directory) configured only through PULSAR_PREFIX_ variables, as
// `docker run -e` and testcontainers' Pulsar modules pass them, and checks what a container
// user relies on: the settings apply (the CONNECTED frame carries maxMessageSize), the admin
// API answers ["standalone"], and the log has exactly one line with the text the
// testcontainers modules wait for.
func TestStandaloneAsTheImageRunsIt(t *testing.T) {
	brokerAddr, httpAddr := freeAddr(t), freeAddr(t)
	_, bport, _ := net.SplitHostPort(brokerAddr)
	_, hport, _ := net.SplitHostPort(httpAddr)
	cmd := exec.Command(binary, "standalone", "--data-dir", filepath.Join(t.TempDir(), "data"))
	cmd.Env = append(os.Environ(), imageEnv(bport, hport)...)
	checkImageStandalone(t, cmd, brokerAddr, httpAddr)
}

// imageEnv is the configuration a container user passes with `docker run -e`: ports, the
// bind address and one setting (maxMessageSize) whose effect checkImageStandalone sees.
func imageEnv(bport, hport string) []string {
	return []string{"PULSAR_PREFIX_brokerServicePort=" + bport, "PULSAR_PREFIX_webServicePort=" + hport,
		"PULSAR_PREFIX_bindAddress=127.0.0.1", "PULSAR_PREFIX_standaloneBookieAddress=127.0.0.1:0",
		"PULSAR_PREFIX_maxMessageSize=1048576"}
}

// checkImageStandalone starts cmd (a standalone configured by imageEnv) and checks what a
// container user relies on, then stops it with SIGTERM and wants a clean exit.
func checkImageStandalone(t *testing.T, cmd *exec.Cmd, brokerAddr, httpAddr string) {
	t.Helper()
	out, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout = cmd.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := make(chan string, 1000)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			lines <- sc.Text()
		}
		_, _ = io.Copy(io.Discard, out)
		close(lines)
	}()
	var seen []string
	readyLines := 0
	deadline := time.After(2 * time.Minute)
	for readyLines == 0 {
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatalf("standalone exited before its readiness line:\n%s", strings.Join(seen, "\n"))
			}
			seen = append(seen, l)
			if strings.Contains(l, standalone.PulsarReadyText) {
				readyLines++
			}
		case <-deadline:
			t.Fatalf("no readiness line:\n%s", strings.Join(seen, "\n"))
		}
	}

	resp, err := http.Get("http://" + httpAddr + "/admin/v2/clusters")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if strings.TrimSpace(string(body)) != `["standalone"]` {
		t.Fatalf("/admin/v2/clusters = %s", body)
	}
	if got := connectedMaxMessageSize(t, brokerAddr); got != 1048576 {
		t.Fatalf("CONNECTED max_message_size = %d, want PULSAR_PREFIX_maxMessageSize's 1048576", got)
	}

	_ = cmd.Process.Signal(syscall.SIGTERM)
	for l := range lines {
		seen = append(seen, l)
		if strings.Contains(l, standalone.PulsarReadyText) {
			readyLines++
		}
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("exit after SIGTERM: %v\n%s", err, strings.Join(seen, "\n"))
	}
	if readyLines != 1 {
		t.Fatalf("%d readiness lines, want exactly one:\n%s", readyLines, strings.Join(seen, "\n"))
	}
}

func connectedMaxMessageSize(t *testing.T, addr string) int32 {
	t.Helper()
	nc, err := net.DialTimeout("tcp", addr, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	_ = nc.SetDeadline(time.Now().Add(30 * time.Second))
	b, err := wire.AppendCommand(nil, &pb.BaseCommand{Type: pb.BaseCommand_CONNECT.Enum(), Connect: &pb.CommandConnect{
		ClientVersion: proto.String("magnetar-image-test"), ProtocolVersion: proto.Int32(21)}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := nc.Write(b); err != nil {
		t.Fatal(err)
	}
	f, err := wire.NewReader(bufio.NewReader(nc), 0).ReadFrame()
	if err != nil || f.Cmd.GetType() != pb.BaseCommand_CONNECTED {
		t.Fatalf("after CONNECT: %v, %v", f.Cmd.GetType(), err)
	}
	return f.Cmd.GetConnected().GetMaxMessageSize()
}
