package testenv

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// KafkaArtifacts are the Maven coordinates of the Apache Kafka broker, its tools and
// Kafka Connect with the FileStream connectors.
var KafkaArtifacts = []string{
	"org.apache.kafka:kafka_2.13:" + KafkaVersion,
	"org.apache.kafka:kafka-tools:" + KafkaVersion,
	"org.apache.kafka:connect-runtime:" + KafkaVersion,
	"org.apache.kafka:connect-file:" + KafkaVersion,
	"org.slf4j:slf4j-reload4j:1.7.36",
}

// KafkaClasspath is the jars of KafkaArtifacts, fetched once into
// ~/.cache/magnetar-maven/kafka-<version>.
func KafkaClasspath(tb testing.TB) []string {
	tb.Helper()
	return MavenClasspath(tb, "kafka-"+KafkaVersion, KafkaArtifacts...)
}

// KafkaOptions configure StartKafka.
type KafkaOptions struct {
	// Dir holds the log directory and config (default tb.TempDir()).
	Dir string
	// Heap is the broker's -Xmx (default 512m).
	Heap string
	// Props are extra server.properties lines (key=value), e.g. "log.flush.interval.messages=1"
	// for an fsync per message.
	Props []string
}

// KafkaBroker is a running Apache Kafka broker+controller in KRaft mode.
type KafkaBroker struct {
	// Addr is the PLAINTEXT listener, host:port.
	Addr      string
	Dir       string
	Classpath []string
	proc      *Process
}

// StartKafka formats a KRaft log directory and starts a combined broker+controller on free
// loopback ports, returning once the PLAINTEXT listener accepts connections. tb.Cleanup
// stops it.
func StartKafka(tb testing.TB, o KafkaOptions) *KafkaBroker {
	tb.Helper()
	cp := KafkaClasspath(tb)
	dir := o.Dir
	if dir == "" {
		dir = tb.TempDir()
	}
	heap := o.Heap
	if heap == "" {
		heap = "512m"
	}
	var lastErr error
	for attempt := 0; attempt < 3; attempt++ {
		b, err := startKafkaOnce(tb, cp, dir, heap, o.Props)
		if err == nil {
			return b
		}
		lastErr = err
	}
	tb.Fatalf("testenv: Apache Kafka did not start: %v", lastErr)
	return nil
}

func startKafkaOnce(tb testing.TB, cp []string, dir, heap string, extra []string) (*KafkaBroker, error) {
	port, cport := FreePort(tb), FreePort(tb)
	logs := filepath.Join(dir, "kraft-logs")
	_ = os.RemoveAll(logs)
	props := []string{
		"process.roles=broker,controller",
		"node.id=1",
		"controller.quorum.voters=1@127.0.0.1:" + strconv.Itoa(cport),
		"listeners=PLAINTEXT://127.0.0.1:" + strconv.Itoa(port) + ",CONTROLLER://127.0.0.1:" + strconv.Itoa(cport),
		"advertised.listeners=PLAINTEXT://127.0.0.1:" + strconv.Itoa(port),
		"controller.listener.names=CONTROLLER",
		"inter.broker.listener.name=PLAINTEXT",
		"listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
		"log.dirs=" + logs,
		"num.partitions=1",
		"offsets.topic.replication.factor=1",
		"offsets.topic.num.partitions=4",
		"transaction.state.log.replication.factor=1",
		"transaction.state.log.min.isr=1",
		"group.initial.rebalance.delay.ms=0",
		"share.coordinator.state.topic.replication.factor=1",
		"share.coordinator.state.topic.min.isr=1",
	}
	props = append(props, extra...)
	cfg := filepath.Join(dir, "server.properties")
	if err := os.WriteFile(cfg, []byte(strings.Join(props, "\n")+"\n"), 0o644); err != nil {
		return nil, err
	}
	log4j := filepath.Join(dir, "log4j.properties")
	if err := os.WriteFile(log4j, []byte(quietLog4j), 0o644); err != nil {
		return nil, err
	}
	var id [16]byte
	_, _ = rand.Read(id[:])
	clusterID := base64.RawURLEncoding.EncodeToString(id[:])
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	jo := JavaOptions{Heap: "256m", Props: map[string]string{"log4j.configuration": "file:" + log4j}}
	if out, err := RunJava(ctx, cp, "kafka.tools.StorageTool", []string{"format", "-t", clusterID, "-c", cfg}, jo); err != nil {
		return nil, fmt.Errorf("formatting the KRaft log directory: %w\n%s", err, tail(out, 4000))
	}
	jo.Heap = heap
	proc := StartJava(tb, cp, "kafka.Kafka", []string{cfg}, jo)
	b := &KafkaBroker{Addr: "127.0.0.1:" + strconv.Itoa(port), Dir: dir, Classpath: cp, proc: proc}
	deadline := time.Now().Add(3 * time.Minute)
	for {
		if exited, err := proc.Exited(); exited {
			return nil, fmt.Errorf("broker exited: %v\n%s", err, tail(proc.Output(), 4000))
		}
		if c, err := net.DialTimeout("tcp", b.Addr, time.Second); err == nil {
			_ = c.Close()
			if strings.Contains(proc.Output(), "Kafka Server started") || strings.Contains(proc.Output(), "started (kafka.server.KafkaRaftServer)") {
				return b, nil
			}
		}
		if time.Now().After(deadline) {
			proc.Kill()
			return nil, fmt.Errorf("broker not ready after 3 minutes\n%s", tail(proc.Output(), 4000))
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// Output is the broker's log so far.
func (b *KafkaBroker) Output() string { return b.proc.Output() }

// Stop stops the broker (SIGTERM, then SIGKILL).
func (b *KafkaBroker) Stop() { b.proc.Stop() }

// quietLog4j keeps the JVMs' logs to warnings on stdout, plus the start-up line
// StartKafka waits for.
const quietLog4j = `log4j.rootLogger=WARN, stdout
log4j.appender.stdout=org.apache.log4j.ConsoleAppender
log4j.appender.stdout.layout=org.apache.log4j.PatternLayout
log4j.appender.stdout.layout.ConversionPattern=[%d] %p %m (%c)%n
log4j.logger.kafka.server.KafkaRaftServer=INFO
log4j.logger.kafka.server.BrokerServer=INFO
`
