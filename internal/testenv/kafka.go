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
	// Port and ControllerPort are the listener ports; 0 picks free ones.
	Port, ControllerPort int
	// JVMFlags replace the test defaults (JavaOptions.Flags) for the broker JVM; the
	// benchmark passes KafkaPerformanceFlags.
	JVMFlags []string
}

// KafkaPerformanceFlags are what bin/kafka-run-class.sh starts a broker with
// (KAFKA_JVM_PERFORMANCE_OPTS); kafka-server-start.sh adds -Xms equal to -Xmx.
var KafkaPerformanceFlags = []string{
	"-server", "-XX:+UseG1GC", "-XX:MaxGCPauseMillis=20", "-XX:InitiatingHeapOccupancyPercent=35",
	"-XX:+ExplicitGCInvokesConcurrent", "-XX:MaxInlineLevel=15",
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
	if o.Dir == "" {
		o.Dir = tb.TempDir()
	}
	b, err := StartKafkaServer(o)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(b.Stop)
	return b
}

// StartKafkaServer is StartKafka for callers without a testing.TB (the benchmark
// harness); o.Dir is required and the caller calls Stop.
func StartKafkaServer(o KafkaOptions) (*KafkaBroker, error) {
	if o.Dir == "" {
		return nil, fmt.Errorf("testenv: StartKafkaServer needs a directory")
	}
	cp, err := FetchMaven("kafka-"+KafkaVersion, KafkaArtifacts...)
	if err != nil {
		return nil, fmt.Errorf("testenv: fetching Apache Kafka from Maven Central: %w", err)
	}
	if o.Heap == "" {
		o.Heap = "512m"
	}
	var lastErr error
	for attempt := 0; attempt < 3; attempt++ {
		b, err := startKafkaOnce(cp, o)
		if err == nil {
			return b, nil
		}
		lastErr = err
	}
	return nil, fmt.Errorf("testenv: Apache Kafka did not start: %w", lastErr)
}

func startKafkaOnce(cp []string, o KafkaOptions) (*KafkaBroker, error) {
	bin, args, addr, err := kafkaCommand(cp, o)
	dir := o.Dir
	if err != nil {
		return nil, err
	}
	proc, err := StartProcess(bin, args, nil, "")
	if err != nil {
		return nil, err
	}
	b := &KafkaBroker{Addr: addr, Dir: dir, Classpath: cp, proc: proc}
	deadline := time.Now().Add(3 * time.Minute)
	for {
		if exited, err := proc.Exited(); exited {
			return nil, fmt.Errorf("broker exited: %v\n%s", err, tail(proc.Output(), 4000))
		}
		if KafkaReady(addr, proc.Output()) {
			return b, nil
		}
		if time.Now().After(deadline) {
			proc.Kill()
			return nil, fmt.Errorf("broker not ready after 3 minutes\n%s", tail(proc.Output(), 4000))
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// KafkaReady tells whether a broker started by KafkaCommand, whose output so far is out,
// accepts clients on addr.
func KafkaReady(addr, out string) bool {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return false
	}
	_ = c.Close()
	return strings.Contains(out, "Kafka Server started") || strings.Contains(out, "started (kafka.server.KafkaRaftServer)")
}

// KafkaCommand fetches Apache Kafka (once), formats a KRaft log directory under o.Dir for a
// broker+controller on free loopback ports and returns the java command line that starts
// it and its PLAINTEXT address. It is for callers that run processes their own way (the
// benchmark harness samples the JVM's /proc); others use StartKafka.
func KafkaCommand(o KafkaOptions) (bin string, args []string, addr string, err error) {
	cp, err := FetchMaven("kafka-"+KafkaVersion, KafkaArtifacts...)
	if err != nil {
		return "", nil, "", err
	}
	if o.Heap == "" {
		o.Heap = "512m"
	}
	return kafkaCommand(cp, o)
}

func kafkaCommand(cp []string, o KafkaOptions) (string, []string, string, error) {
	dir, heap, extra := o.Dir, o.Heap, o.Props
	port, cport := o.Port, o.ControllerPort
	var err error
	if port == 0 {
		if port, err = freePort(); err != nil {
			return "", nil, "", err
		}
	}
	if cport == 0 {
		if cport, err = freePort(); err != nil {
			return "", nil, "", err
		}
	}
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
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", nil, "", err
	}
	cfg := filepath.Join(dir, "server.properties")
	if err := os.WriteFile(cfg, []byte(strings.Join(props, "\n")+"\n"), 0o644); err != nil {
		return "", nil, "", err
	}
	log4j := filepath.Join(dir, "log4j.properties")
	if err := os.WriteFile(log4j, []byte(quietLog4j), 0o644); err != nil {
		return "", nil, "", err
	}
	// An id whose base64 starts with '-' reads as an option to kafka-storage's argument
	// parser ("--cluster-id/-t: expected one argument"), one start in 64; Kafka's own
	// Uuid.randomUuid redraws those too.
	var clusterID string
	for clusterID == "" || clusterID[0] == '-' {
		var id [16]byte
		_, _ = rand.Read(id[:])
		clusterID = base64.RawURLEncoding.EncodeToString(id[:])
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	jo := JavaOptions{Heap: "256m", Props: map[string]string{"log4j.configuration": "file:" + log4j}}
	if out, err := RunJava(ctx, cp, "kafka.tools.StorageTool", []string{"format", "-t", clusterID, "-c", cfg}, jo); err != nil {
		return "", nil, "", fmt.Errorf("formatting the KRaft log directory: %w\n%s", err, tail(out, 4000))
	}
	bin, err := javaBin()
	if err != nil {
		return "", nil, "", err
	}
	jo.Heap = heap
	if o.JVMFlags != nil {
		jo.Flags = o.JVMFlags
	}
	return bin, javaArgs(cp, "kafka.Kafka", []string{cfg}, jo), "127.0.0.1:" + strconv.Itoa(port), nil
}

// Output is the broker's log so far.
func (b *KafkaBroker) Output() string { return b.proc.Output() }

// Stop stops the broker (SIGTERM, then SIGKILL).
func (b *KafkaBroker) Stop() { b.proc.Stop() }

// Pid is the broker JVM's process id (for /proc sampling).
func (b *KafkaBroker) Pid() int { return b.proc.Pid() }

// quietLog4j keeps the JVMs' logs to warnings on stdout, plus the start-up line
// StartKafka waits for.
const quietLog4j = `log4j.rootLogger=WARN, stdout
log4j.appender.stdout=org.apache.log4j.ConsoleAppender
log4j.appender.stdout.layout=org.apache.log4j.PatternLayout
log4j.appender.stdout.layout.ConversionPattern=[%d] %p %m (%c)%n
log4j.logger.kafka.server.KafkaRaftServer=INFO
log4j.logger.kafka.server.BrokerServer=INFO
`
