//go:build kafkacompat

package kafka

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/magnetar-io/magnetar/internal/testenv"
)

// TestKafkaConnectFileStream moves a file through a topic with Kafka Connect standalone
// and the FileStream source and sink connectors.
func TestKafkaConnectFileStream(t *testing.T) {
	_, _, addr := startMem(t)
	cli := testenv.NewKafkaCLI(t)
	dir := t.TempDir()
	in, out := filepath.Join(dir, "in.txt"), filepath.Join(dir, "out.txt")
	var lines []string
	for i := 0; i < 50; i++ {
		lines = append(lines, fmt.Sprintf("connect line %d", i))
	}
	write := func(name, s string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	write("in.txt", strings.Join(lines, "\n")+"\n")
	worker := write("worker.properties", strings.Join([]string{
		"bootstrap.servers=" + addr,
		"key.converter=org.apache.kafka.connect.storage.StringConverter",
		"value.converter=org.apache.kafka.connect.storage.StringConverter",
		"offset.storage.file.filename=" + filepath.Join(dir, "offsets"),
		"offset.flush.interval.ms=1000",
		"listeners=http://127.0.0.1:" + strconv.Itoa(testenv.FreePort(t)),
	}, "\n"))
	src := write("source.properties", "name=file-source\nconnector.class=org.apache.kafka.connect.file.FileStreamSourceConnector\ntasks.max=1\nfile="+in+"\ntopic=connect-lines\n")
	sink := write("sink.properties", "name=file-sink\nconnector.class=org.apache.kafka.connect.file.FileStreamSinkConnector\ntasks.max=1\nfile="+out+"\ntopics=connect-lines\n")
	p := cli.Start(t, testenv.ConnectStandaloneMain, worker, src, sink)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	for {
		got, _ := os.ReadFile(out)
		if strings.Count(string(got), "\n") >= len(lines) {
			if string(got) != strings.Join(lines, "\n")+"\n" {
				t.Fatalf("sink file differs from the source file:\n%s", got)
			}
			return
		}
		if exited, err := p.Exited(); exited {
			t.Fatalf("connect exited: %v\n%s", err, p.Output())
		}
		select {
		case <-ctx.Done():
			t.Fatalf("the sink wrote %d of %d lines\n%s", strings.Count(string(got), "\n"), len(lines), p.Output())
		case <-time.After(200 * time.Millisecond):
		}
	}
}
