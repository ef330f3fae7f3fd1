package e2e

import (
	"bufio"
	"bytes"
	"errors"
	"flag"
	"fmt"
	"net"
	"os/exec"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/magnetar-io/magnetar/internal/wire"
	"github.com/magnetar-io/magnetar/internal/wire/pb"
)

// startupBinary replaces the binary TestMain built, for measuring the release build
// (`make bench-startup` passes bin/magnetar, built CGO_ENABLED=0 like the image's).
var startupBinary = flag.String("startup-binary", "", "magnetar binary to time (default: the one TestMain built)")

// startupRuns is how many starts each sub-benchmark times; it reports their median.
const startupRuns = 10

// BenchmarkStandaloneReady times `magnetar standalone` from exec to ready, where ready means
// what a client needs (issue 24): the binary port accepts a CONNECT and a LOOKUP of a topic
// that does not exist yet answers. The probe dials every millisecond. "fresh" starts on an
// empty data directory each time; "restart" starts on one that a previous run left behind
// after a clean stop (SIGTERM). Each reports the median, minimum and maximum of startupRuns
// starts in ms; b.N is ignored, so run it with -benchtime 1x:
//
//	go test -tags pebblegozstd -run '^$' -bench StandaloneReady -benchtime 1x ./tests/e2e/
func BenchmarkStandaloneReady(b *testing.B) {
	bin := binary
	if *startupBinary != "" {
		bin = *startupBinary
	}
	b.Run("fresh", func(b *testing.B) {
		reportStartup(b, func(i int) time.Duration {
			return timeStart(b, bin, filepath.Join(b.TempDir(), "data"), fmt.Sprintf("fresh-%d", i))
		})
	})
	b.Run("restart", func(b *testing.B) {
		dir := filepath.Join(b.TempDir(), "data")
		timeStart(b, bin, dir, "first")
		reportStartup(b, func(i int) time.Duration { return timeStart(b, bin, dir, fmt.Sprintf("restart-%d", i)) })
	})
}

func reportStartup(b *testing.B, run func(i int) time.Duration) {
	var ms []float64
	for i := range startupRuns {
		ms = append(ms, float64(run(i).Microseconds())/1000)
	}
	b.Logf("ready after (ms): %v", ms)
	slices.Sort(ms)
	b.ReportMetric(0, "ns/op")
	b.ReportMetric((ms[len(ms)/2-1]+ms[len(ms)/2])/2, "median-ms")
	b.ReportMetric(ms[0], "min-ms")
	b.ReportMetric(ms[len(ms)-1], "max-ms")
}

// timeStart starts a standalone on dir, waits for ready, stops it with SIGTERM and returns
// the time from exec to ready.
func timeStart(b *testing.B, bin, dir, topic string) time.Duration {
	b.Helper()
	brokerAddr := freeAddr(b)
	_, port, _ := net.SplitHostPort(brokerAddr)
	cmd := exec.Command(bin, "standalone", "--data-dir", dir, "--log-level", "warn",
		"--metadata-listen", "http://127.0.0.1:0", "--metadata-peer", "http://127.0.0.1:0",
		"--bookie-address", "127.0.0.1:0", "--bind-address", "127.0.0.1", "--port", port, "--http-port", "0")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	began := time.Now()
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	defer func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(time.Minute):
			_ = cmd.Process.Kill()
			<-exited
			b.Fatalf("standalone did not stop within a minute of SIGTERM:\n%s", stderr.String())
		}
	}()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		err := connectAndLookup(brokerAddr, "persistent://public/default/startup-"+topic)
		if err == nil {
			return time.Since(began)
		}
		select {
		case err := <-exited:
			b.Fatalf("standalone exited before ready: %v\n%s", err, stderr.String())
		default:
		}
		if time.Now().After(deadline) {
			b.Fatalf("standalone not ready within 2 minutes: %v\n%s", err, stderr.String())
		}
		time.Sleep(time.Millisecond)
	}
}

var errNotYet = errors.New("not ready yet")

// connectAndLookup sends CONNECT and a LOOKUP of topic on one connection and succeeds when
// the broker answers the lookup with Connect.
func connectAndLookup(addr, topic string) error {
	nc, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return err
	}
	defer nc.Close()
	_ = nc.SetDeadline(time.Now().Add(10 * time.Second))
	var out []byte
	out, err = wire.AppendCommand(out, &pb.BaseCommand{Type: pb.BaseCommand_CONNECT.Enum(), Connect: &pb.CommandConnect{
		ClientVersion: proto.String("magnetar-startup-bench"), ProtocolVersion: proto.Int32(21)}})
	if err != nil {
		return err
	}
	out, err = wire.AppendCommand(out, &pb.BaseCommand{Type: pb.BaseCommand_LOOKUP.Enum(), LookupTopic: &pb.CommandLookupTopic{
		Topic: proto.String(topic), RequestId: proto.Uint64(1)}})
	if err != nil {
		return err
	}
	if _, err := nc.Write(out); err != nil {
		return err
	}
	rd := wire.NewReader(bufio.NewReader(nc), 0)
	for {
		f, err := rd.ReadFrame()
		if err != nil {
			return err
		}
		switch f.Cmd.GetType() {
		case pb.BaseCommand_CONNECTED, pb.BaseCommand_PING:
		case pb.BaseCommand_LOOKUP_RESPONSE:
			if r := f.Cmd.GetLookupTopicResponse(); r.GetResponse() == pb.CommandLookupTopicResponse_Connect {
				return nil
			}
			return fmt.Errorf("%w: lookup answered %v", errNotYet, f.Cmd.GetLookupTopicResponse())
		default:
			return fmt.Errorf("%w: got %v", errNotYet, f.Cmd.GetType())
		}
	}
}
