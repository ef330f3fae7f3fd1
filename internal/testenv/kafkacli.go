package testenv

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// Kafka's command-line tools, as their scripts in bin/ run them (main classes of Kafka
// 4.x). Each runs on this machine's Java from the jars KafkaClasspath fetched.
const (
	KafkaTopicsMain          = "org.apache.kafka.tools.TopicCommand"                        // kafka-topics.sh
	KafkaConsoleProducerMain = "org.apache.kafka.tools.ConsoleProducer"                     // kafka-console-producer.sh
	KafkaConsoleConsumerMain = "org.apache.kafka.tools.consumer.ConsoleConsumer"            // kafka-console-consumer.sh
	KafkaConsumerGroupsMain  = "org.apache.kafka.tools.consumer.group.ConsumerGroupCommand" // kafka-consumer-groups.sh
	KafkaProducerPerfMain    = "org.apache.kafka.tools.ProducerPerformance"                 // kafka-producer-perf-test.sh
	KafkaConsumerPerfMain    = "org.apache.kafka.tools.ConsumerPerformance"                 // kafka-consumer-perf-test.sh
	ConnectStandaloneMain    = "org.apache.kafka.connect.cli.ConnectStandalone"             // connect-standalone.sh
	KafkaConfigsMain         = "kafka.admin.ConfigCommand"                                  // kafka-configs.sh
	KafkaTransactionsMain    = "org.apache.kafka.tools.TransactionsCommand"                 // kafka-transactions.sh
)

// KafkaCLI runs Kafka's tools.
type KafkaCLI struct {
	Classpath []string
	log4j     string
}

// NewKafkaCLI fetches the tools (once) and returns a runner.
func NewKafkaCLI(tb testing.TB) *KafkaCLI {
	tb.Helper()
	dir := tb.TempDir()
	l := filepath.Join(dir, "tools-log4j.properties")
	if err := os.WriteFile(l, []byte(quietLog4j), 0o644); err != nil {
		tb.Fatal(err)
	}
	return &KafkaCLI{Classpath: KafkaClasspath(tb), log4j: l}
}

func (k *KafkaCLI) opts(stdin []byte) JavaOptions {
	return JavaOptions{Heap: "256m", Stdin: stdin, Props: map[string]string{"log4j.configuration": "file:" + k.log4j}}
}

// Run runs one tool to completion (at most timeout) with stdin, returning its output.
func (k *KafkaCLI) Run(main string, timeout time.Duration, stdin []byte, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	return RunJava(ctx, k.Classpath, main, args, k.opts(stdin))
}

// Start starts a long-running tool (Connect standalone, a console consumer).
func (k *KafkaCLI) Start(tb testing.TB, main string, args ...string) *Process {
	tb.Helper()
	return StartJava(tb, k.Classpath, main, args, k.opts(nil))
}
