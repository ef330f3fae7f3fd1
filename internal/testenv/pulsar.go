package testenv

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// PulsarVersion is the Apache Pulsar release the helpers fetch (the newest release on Maven Central whose modules are all there: 4.0.x lacks jetcd-core-shaded and pulsar-opentelemetry).
const PulsarVersion = "4.2.4"

// PulsarArtifacts are the Maven coordinates of Pulsar standalone: the broker, which holds
// PulsarStandaloneStarter and pulls in BookKeeper, the RocksDB metadata store and the rest,
// plus the log4j2 binding the distribution ships (pulsar-broker itself only needs
// slf4j-api), with the versions of Pulsar's parent POM (without them Maven's nearest-first
// choice mixes OpenTelemetry releases and the broker does not start).
var PulsarArtifacts = []string{
	BOMPrefix + "org.apache.pulsar:pulsar:" + PulsarVersion,
	"org.apache.pulsar:pulsar-broker:" + PulsarVersion,
	"org.apache.logging.log4j:log4j-core:2.25.4",
	"org.apache.logging.log4j:log4j-slf4j2-impl:2.25.4",
}

// PulsarOptions configure PulsarCommand.
type PulsarOptions struct {
	// Dir holds conf/standalone.conf, conf/log4j2.properties and the data (required).
	Dir string
	// Heap is -Xms and -Xmx (default 2g, as conf/pulsar_env.sh); DirectMemory is
	// -XX:MaxDirectMemorySize (default 4g, likewise).
	Heap, DirectMemory string
	// SyncData is journalSyncData: true fsyncs the bookie journal before each add is
	// acknowledged; false is what the shipped standalone.conf sets.
	SyncData bool
	// Port (Pulsar protocol), HTTPPort (admin REST) and BookiePort; 0 picks free ones.
	Port, HTTPPort, BookiePort int
	// Props are extra standalone.conf lines (key=value); later lines win.
	Props []string
	// JVMFlags replace the GC and JIT flags (default: those of conf/pulsar_env.sh with the
	// thread counts left to the JVM).
	JVMFlags []string
}

// PulsarStandalone is what PulsarCommand prepared.
type PulsarStandalone struct {
	Bin, ServiceURL, HTTPURL string
	Args                     []string
	// Conf is the standalone.conf written.
	Conf string
}

// pulsarConfKeys are the keys of the standalone.conf the Apache Pulsar distribution ships
// whose values differ from the broker's and bookie's built-in defaults and matter to a
// benchmark, with those shipped values; everything else keeps its default. Ports and
// addresses are added by PulsarCommand.
var pulsarConfKeys = []string{
	"clusterName=standalone",
	"metadataStoreUrl=",
	"managedLedgerDefaultEnsembleSize=1",
	"managedLedgerDefaultWriteQuorum=1",
	"managedLedgerDefaultAckQuorum=1",
	"ledgerStorageClass=org.apache.bookkeeper.bookie.storage.ldb.DbLedgerStorage",
	"journalMaxGroupWaitMSec=1",
	"flushInterval=60000",
	"gcWaitTime=300000",
	"dbStorage_rocksDB_writeBufferSizeMB=4",
	"dbStorage_rocksDB_sstSizeInMB=4",
	"allowLoopback=true",
	"diskUsageThreshold=0.99",
	"diskUsageWarnThreshold=0.99",
	"bookkeeperUseV2WireProtocol=true",
	"loadManagerClassName=org.apache.pulsar.broker.loadbalance.NoopLoadManager",
	"loadBalancerEnabled=false",
	"allowAutoTopicCreation=true",
	"allowAutoTopicCreationType=non-partitioned",
	"maxUnackedMessagesPerConsumer=50000",
	"transactionCoordinatorEnabled=false",
	// Not shipped this way: the benchmark needs neither the WebSocket proxy nor the status
	// file, and the bookie would listen on every interface.
	"webSocketServiceEnabled=false",
	"statusFilePath=",
	"listeningInterface=lo",
}

// PulsarCommand fetches Apache Pulsar (once, from Maven Central into
// ~/.cache/magnetar-maven/pulsar-<version>), writes conf/standalone.conf and
// conf/log4j2.properties under o.Dir and returns the java command line that runs
// `pulsar standalone` on loopback (RocksDB metadata, one bookie, no functions worker, no
// stream storage), as bin/pulsar would start it. It is for callers that run the process
// their own way (the benchmark harness samples the JVM's /proc).
func PulsarCommand(o PulsarOptions) (*PulsarStandalone, error) {
	if o.Dir == "" {
		return nil, fmt.Errorf("testenv: PulsarCommand needs a directory")
	}
	cp, err := FetchMaven("pulsar-"+PulsarVersion, PulsarArtifacts...)
	if err != nil {
		return nil, fmt.Errorf("testenv: fetching Apache Pulsar from Maven Central: %w", err)
	}
	if o.Heap == "" {
		o.Heap = "2g"
	}
	if o.DirectMemory == "" {
		o.DirectMemory = "4g"
	}
	for _, p := range []*int{&o.Port, &o.HTTPPort, &o.BookiePort} {
		if *p == 0 {
			if *p, err = freePort(); err != nil {
				return nil, err
			}
		}
	}
	conf := filepath.Join(o.Dir, "conf")
	data := filepath.Join(o.Dir, "data")
	if err := os.MkdirAll(conf, 0o755); err != nil {
		return nil, err
	}
	lines := append([]string{}, pulsarConfKeys...)
	lines = append(lines,
		"bindAddress=127.0.0.1",
		"advertisedAddress=127.0.0.1",
		"brokerServicePort="+strconv.Itoa(o.Port),
		"webServicePort="+strconv.Itoa(o.HTTPPort),
		"journalSyncData="+strconv.FormatBool(o.SyncData),
	)
	lines = append(lines, o.Props...)
	confPath := filepath.Join(conf, "standalone.conf")
	if err := os.WriteFile(confPath, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		return nil, err
	}
	logConf := filepath.Join(conf, "log4j2.properties")
	if err := os.WriteFile(logConf, []byte(pulsarLog4j2), 0o644); err != nil {
		return nil, err
	}
	bin, err := javaBin()
	if err != nil {
		return nil, err
	}
	flags := o.JVMFlags
	if flags == nil {
		flags = PulsarGCFlags
	}
	args := []string{"-Xms" + o.Heap, "-Xmx" + o.Heap, "-XX:MaxDirectMemorySize=" + o.DirectMemory}
	args = append(args, flags...)
	args = append(args,
		"-Dpulsar.allocator.exit_on_oom=true", "-Dio.netty.recycler.maxCapacityPerThread=4096",
		"-Djute.maxbuffer=10485760", "-Djava.net.preferIPv4Stack=true", "-Dio.netty.tryReflectionSetAccessible=true",
		"--add-opens", "java.base/java.io=ALL-UNNAMED", "--add-opens", "java.base/java.util.zip=ALL-UNNAMED",
		"--add-opens", "java.base/java.nio=ALL-UNNAMED", "--add-opens", "java.base/jdk.internal.misc=ALL-UNNAMED",
		"--add-opens", "java.base/sun.net=ALL-UNNAMED", "--add-opens", "java.management/sun.management=ALL-UNNAMED",
		"-Dlog4j.configurationFile="+logConf, "-Dlog4j.shutdownHookEnabled=false", "-Dlog4j2.is.webapp=false",
		"-Dbookkeeper.metadata.bookie.drivers=org.apache.pulsar.metadata.bookkeeper.PulsarMetadataBookieDriver",
		"-Dbookkeeper.metadata.client.drivers=org.apache.pulsar.metadata.bookkeeper.PulsarMetadataClientDriver",
		"-cp", strings.Join(cp, ":"), "org.apache.pulsar.PulsarStandaloneStarter",
		"--config", confPath,
		"--metadata-dir", filepath.Join(data, "metadata"),
		"--bookkeeper-dir", filepath.Join(data, "bookkeeper"),
		"--zookeeper-dir", filepath.Join(data, "zookeeper"), // must not exist: RocksDB metadata
		"--bookkeeper-port", strconv.Itoa(o.BookiePort),
		"--no-functions-worker", "--no-stream-storage",
	)
	return &PulsarStandalone{
		Bin: bin, Args: args, Conf: confPath,
		ServiceURL: "pulsar://127.0.0.1:" + strconv.Itoa(o.Port),
		HTTPURL:    "http://127.0.0.1:" + strconv.Itoa(o.HTTPPort),
	}, nil
}

// PulsarGCFlags are conf/pulsar_env.sh's PULSAR_GC without its fixed thread counts (32
// parallel and concurrent GC threads, meant for big machines; the JVM sizes them to the
// cores otherwise).
var PulsarGCFlags = []string{
	"-XX:+UseG1GC", "-XX:MaxGCPauseMillis=10", "-XX:+ParallelRefProcEnabled", "-XX:+UnlockExperimentalVMOptions",
	"-XX:+DoEscapeAnalysis", "-XX:G1NewSizePercent=50", "-XX:+DisableExplicitGC",
}

// pulsarLog4j2 logs warnings to stdout (the caller keeps it), and the lines that say the
// standalone is up.
const pulsarLog4j2 = `status = warn
appender.console.type = Console
appender.console.name = Console
appender.console.target = SYSTEM_OUT
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{ISO8601} %-5level [%t] %c{1.} - %msg%n
rootLogger.level = warn
rootLogger.appenderRef.console.ref = Console
logger.standalone.name = org.apache.pulsar.PulsarStandaloneStarter
logger.standalone.level = info
`
