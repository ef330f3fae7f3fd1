// Command kafka-server runs Apache Kafka (testenv.KafkaVersion from Maven Central, KRaft
// broker+controller) for programs outside this module: the benchmark harness (bench/, its
// own module) builds it and runs it, so it needs neither the main module's dependencies nor
// a copy of the fetch code. It formats the log directory and then replaces itself with the
// JVM, so the pid its caller holds is the broker's (the harness samples its /proc).
package main

import (
	"flag"
	"fmt"
	"os"
	"strings"
	"syscall"

	"github.com/magnetar-io/magnetar/internal/testenv"
)

func main() {
	dir := flag.String("dir", "", "data directory (required)")
	heap := flag.String("heap", "1g", "broker JVM heap (-Xmx)")
	port := flag.Int("port", 0, "PLAINTEXT listener port on 127.0.0.1 (required)")
	cport := flag.Int("controller-port", 0, "controller listener port on 127.0.0.1 (0: any free)")
	props := flag.String("props", "", "extra server.properties lines, comma-separated key=value")
	production := flag.Bool("production-jvm", false, "run the JVM with bin/kafka-run-class.sh's G1 flags and -Xms equal to -heap (default: the tests' small-footprint flags)")
	version := flag.Bool("version", false, "print the Apache Kafka version and exit")
	fetch := flag.Bool("fetch", false, "fetch the jars from Maven Central and exit")
	flag.Parse()
	if *version {
		fmt.Println(testenv.KafkaVersion)
		return
	}
	if *fetch {
		if _, err := testenv.FetchMaven("kafka-"+testenv.KafkaVersion, testenv.KafkaArtifacts...); err != nil {
			fmt.Fprintln(os.Stderr, "kafka-server:", err)
			os.Exit(1)
		}
		return
	}
	if *dir == "" || *port == 0 {
		fmt.Fprintln(os.Stderr, "kafka-server: -dir and -port are required")
		os.Exit(2)
	}
	o := testenv.KafkaOptions{Dir: *dir, Heap: *heap, Port: *port, ControllerPort: *cport}
	if *props != "" {
		o.Props = strings.Split(*props, ",")
	}
	if *production {
		o.JVMFlags = append([]string{"-Xms" + *heap}, testenv.KafkaPerformanceFlags...)
	}
	bin, args, _, err := testenv.KafkaCommand(o)
	if err != nil {
		fmt.Fprintln(os.Stderr, "kafka-server:", err)
		os.Exit(1)
	}
	if err := syscall.Exec(bin, append([]string{bin}, args...), os.Environ()); err != nil {
		fmt.Fprintln(os.Stderr, "kafka-server: exec java:", err)
		os.Exit(1)
	}
}
