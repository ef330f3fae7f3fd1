// Command pulsar-server runs Apache Pulsar standalone (testenv.PulsarVersion from Maven
// Central) for programs outside this module: the benchmark harness (bench/, its own
// module) builds it and runs it. It writes conf/standalone.conf under -dir and then
// replaces itself with the JVM, so the pid its caller holds is the standalone's (the
// harness samples its /proc).
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
	dir := flag.String("dir", "", "configuration and data directory (required)")
	heap := flag.String("heap", "2g", "JVM heap (-Xms and -Xmx)")
	direct := flag.String("direct-memory", "4g", "JVM direct memory (-XX:MaxDirectMemorySize)")
	port := flag.Int("port", 0, "Pulsar protocol port on 127.0.0.1 (required)")
	httpPort := flag.Int("http-port", 0, "admin REST port on 127.0.0.1 (0: any free)")
	bookiePort := flag.Int("bookie-port", 0, "bookie port on 127.0.0.1 (0: any free)")
	syncData := flag.Bool("journal-sync-data", true, "journalSyncData: fsync the journal before acknowledging")
	props := flag.String("props", "", "extra standalone.conf lines, comma-separated key=value")
	jvmFlags := flag.String("jvm-flags", "", "GC and JIT flags, space-separated (default: conf/pulsar_env.sh's)")
	version := flag.Bool("version", false, "print the Apache Pulsar version and exit")
	fetch := flag.Bool("fetch", false, "fetch the jars from Maven Central and exit")
	flag.Parse()
	if *version {
		fmt.Println(testenv.PulsarVersion)
		return
	}
	if *fetch {
		if _, err := testenv.FetchMaven("pulsar-"+testenv.PulsarVersion, testenv.PulsarArtifacts...); err != nil {
			fmt.Fprintln(os.Stderr, "pulsar-server:", err)
			os.Exit(1)
		}
		return
	}
	if *dir == "" || *port == 0 {
		fmt.Fprintln(os.Stderr, "pulsar-server: -dir and -port are required")
		os.Exit(2)
	}
	o := testenv.PulsarOptions{Dir: *dir, Heap: *heap, DirectMemory: *direct, SyncData: *syncData,
		Port: *port, HTTPPort: *httpPort, BookiePort: *bookiePort}
	if *props != "" {
		o.Props = strings.Split(*props, ",")
	}
	if *jvmFlags != "" {
		o.JVMFlags = strings.Fields(*jvmFlags)
	}
	ps, err := testenv.PulsarCommand(o)
	if err != nil {
		fmt.Fprintln(os.Stderr, "pulsar-server:", err)
		os.Exit(1)
	}
	if err := syscall.Exec(ps.Bin, append([]string{ps.Bin}, ps.Args...), os.Environ()); err != nil {
		fmt.Fprintln(os.Stderr, "pulsar-server: exec java:", err)
		os.Exit(1)
	}
}
