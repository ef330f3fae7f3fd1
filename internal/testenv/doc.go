// Package testenv starts the real third-party programs that end-to-end tests compare
// Magnetar with or drive it through: jars from Maven Central (Apache Kafka in KRaft mode,
// Kafka's command-line tools, Kafka Connect, any Java client), npm packages (KafkaJS) and
// free loopback ports for them. It is imported by tests only.
//
// Nothing is committed: artifacts are fetched by the ordinary clients (mvn, npm) into
// ~/.cache/magnetar-maven/<name> and ~/.cache/magnetar-npm/<name> on first use and reused
// after. When a fetch cannot happen (no mvn, no network) the helper fails the test with
// the command that failed; it never skips.
//
// Files:
//
//	maven.go   MavenClasspath: a generated pom + mvn dependency:copy-dependencies
//	java.go    RunJava / StartJava: a JVM on a classpath, output kept for failure reports
//	kafka.go   StartKafka: an Apache Kafka 4.x broker+controller (KRaft) on free ports
//	kafkacli.go KafkaCLI: kafka-topics, console producer/consumer, consumer groups,
//	           producer perf test, Connect standalone, as the scripts run them
//	npm.go     NpmPackage / RunNode: a package installed with npm, a node script run with it
//	ports.go   FreePort
//	gobuild.go GoBinary: a Go program built with go install into ~/.cache/magnetar-<what>;
//	           WaitTCP
//	s3.go      StartS3: an S3-compatible server (versitygw, posix backend)
//	azurite.go StartAzurite: Azure Blob Storage's emulator (npm)
//	gcs.go     StartGCS: a Google Cloud Storage emulator (fake-gcs-server)
//	hdfs.go    StartHDFS: Hadoop's MiniDFSCluster, a namenode and a datanode (Maven Central)
//	proxy.go   StartProxy: a TCP proxy that cuts or holds connections (network faults)
//	apt.go     DebianProgram: a program from a Debian package, apt-get installed when missing
//	postgres.go StartPostgres: PostgreSQL 15 (wal_level=logical), run as the postgres user
//	mariadb.go StartMariaDB: MariaDB with the binary log in row format
//	redis.go   StartRedis: Redis with an fsynced append-only file
//	pulsar.go  PulsarCommand: Apache Pulsar standalone (RocksDB metadata, one bookie) for the
//	           benchmark harness, through cmd/pulsar-server as cmd/kafka-server runs Kafka
//
// Other engineers add files here (one per outside program).
package testenv
