# Magnetar build. One build configuration everywhere: Pebble's zstd is the pure-Go one
# (-tags pebblegozstd), so the race-enabled test build (cgo on) and the static release build
# (CGO_ENABLED=0) compress the same way.
GO              ?= go
TAGS            := pebblegozstd
BIN             := bin/magnetar
VERSION         ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS         := -s -w -X github.com/magnetar-io/magnetar/internal/cli.Version=$(VERSION)
STATICCHECK     := honnef.co/go/tools/cmd/staticcheck@v0.8.2
TOOLS           := $(CURDIR)/.tools
TEST_TIMEOUT    ?= 25m
DATA_DIR        ?= ./data

.PHONY: all build run cluster test check lint bench soak fuzz chaos proto clean

all: build

build:
	CGO_ENABLED=0 $(GO) build -tags $(TAGS) -trimpath -ldflags '$(LDFLAGS)' -o $(BIN) ./cmd/magnetar

run: build
	$(BIN) standalone --data-dir $(DATA_DIR)

# cluster runs a local cluster (3 metadata members, 3 bookies, 2 brokers) until Ctrl-C.
cluster: build
	$(BIN) dev-cluster --data-dir $(DATA_DIR)/dev-cluster

# check fails on gofmt or go vet findings; test runs it first.
check:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go') | grep -v '/pb/' || true); \
	if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	$(GO) vet -tags $(TAGS) ./...

test: check
	$(GO) test -race -tags $(TAGS) -timeout $(TEST_TIMEOUT) ./...

lint: check
	GOBIN=$(TOOLS) $(GO) install $(STATICCHECK)
	$(TOOLS)/staticcheck -tags $(TAGS) ./...

bench:
	$(GO) test -tags $(TAGS) -run '^$$' -bench . -benchmem ./...

# soak runs every test the soak tag makes long: the SIGKILL crash loops (TestSoak*), the
# 500 randomized ledger chaos rounds (TestChaosRecovery), the 300 managed-ledger crash/reopen
# rounds (TestRestartRecoveryRandomized) and the chaos harness's long tier (TestChaosLong,
# which the soak tag turns on; it needs root).
SOAK_TESTS      := Soak|TestChaosRecovery|TestRestartRecoveryRandomized|TestChaosLong|TestTxnSIGKILLExactlyOnce|TestTxnClusterCoordinatorOwnerSIGKILL
soak:
	$(GO) test -tags $(TAGS),soak -timeout 10h -run '$(SOAK_TESTS)' ./...

# chaos runs the long tier of the fault harness (tests/chaos, needs root: network namespaces,
# nftables): every scenario R0-R14 of docs/reliability.md on its own cluster in network
# namespaces, each to >= 1,000,000 acknowledged messages and >= 300 s of faults, with a JSON
# result per scenario in CHAOS_RESULTS. CHAOS_SCENARIOS=R1,R3 picks rows, SEED=... replays a
# run. The short tier (TestChaosShort) is part of make test.
CHAOS_RESULTS   ?= $(CURDIR)/chaos-results
CHAOS_SCENARIOS ?=
chaos:
	CHAOS_LONG=1 CHAOS_RESULTS=$(CHAOS_RESULTS) CHAOS_SCENARIOS=$(CHAOS_SCENARIOS) \
		$(GO) test -tags $(TAGS) -timeout 96h -count=1 -v -run TestChaosLong ./tests/chaos/

# fuzz runs every fuzz target of the module, one after the other, FUZZTIME each
# (e.g. make fuzz FUZZTIME=10m). A new Fuzz function is picked up without editing this.
# FUZZMINIMIZETIME caps the engine's minimizing of each input with new coverage (Go's
# default 60 s): in packages whose test binary links much of the product, every exec
# snapshots a large coverage map, so minimizing a 2 KB input took the whole FUZZTIME
# with the worker reporting 0 execs/s.
FUZZTIME        ?= 30s
FUZZMINIMIZETIME ?= 1s
fuzz:
	@set -e; for f in $$(git ls-files '*_test.go' | xargs grep -l '^func Fuzz'); do \
		pkg=./$$(dirname $$f); \
		for fn in $$(grep -o '^func Fuzz[A-Za-z0-9_]*' $$f | cut -d' ' -f2); do \
			echo "== $$pkg $$fn ($(FUZZTIME))"; \
			$(GO) test -tags $(TAGS) -run '^$$' -fuzz "^$$fn$$" -fuzztime $(FUZZTIME) -fuzzminimizetime $(FUZZMINIMIZETIME) -parallel 2 $$pkg; \
		done; \
	done

clean:
	rm -rf bin $(TOOLS)

# proto regenerates internal/wire/pb from internal/wire/proto/pulsar_api.proto. The generated
# code is committed, so normal builds need neither protoc nor the plugin. protoc comes from the
# system (Debian: apt-get install -y protobuf-compiler); protoc-gen-go is pinned to the
# google.golang.org/protobuf version in go.mod and installed into .tools.
PROTOC_GEN_GO   := google.golang.org/protobuf/cmd/protoc-gen-go@v1.36.12

proto:
	@command -v protoc >/dev/null 2>&1 || { echo "protoc not found: install it with 'apt-get update && apt-get install -y protobuf-compiler' (Debian/Ubuntu) or 'brew install protobuf' (macOS)"; exit 1; }
	GOBIN=$(TOOLS) $(GO) install $(PROTOC_GEN_GO)
	protoc --plugin=protoc-gen-go=$(TOOLS)/protoc-gen-go \
		--proto_path=internal/wire/proto \
		--go_out=internal/wire/pb --go_opt=paths=source_relative \
		internal/wire/proto/pulsar_api.proto

# Side-by-side comparison with NATS JetStream, Apache Kafka and Apache Pulsar (issues 10 and
# 25). bench/ is its own Go module, so its dependencies (nats.go, franz-go, gonum plot) stay
# out of the product; nats-server comes from the Go module proxy into ~/.cache/magnetar-bench,
# Kafka and Pulsar from Maven Central into ~/.cache/magnetar-maven (Java 17 and mvn needed).
# The default is the short run (W1-W4, W7; about an hour with the JVM peers); BENCH_FLAGS
# selects workloads, peers and durations, e.g. for the full run with the scaling curves:
#   make bench-compare BENCH_FLAGS='-workloads W1,W2,W3,W4,W5,W6,W7,W9,S1,S2,S3 -warmup 15s -measure 60s -backlog 4GiB'
BENCH_FLAGS ?=
.PHONY: bench-compare bench-compare-scaling
bench-compare: build
	cd bench && $(GO) run ./cmd/bench-compare -repo .. -command "make bench-compare BENCH_FLAGS='$(BENCH_FLAGS)'" $(BENCH_FLAGS)
# The scaling curves alone (S1 topics, S2 subscriptions per topic, S3 producer connections):
# docs/bench-compare-scaling.md and its plots.
bench-compare-scaling: build
	cd bench && $(GO) run ./cmd/bench-compare -repo .. -workloads S1,S2,S3 -out docs/bench-compare-scaling.md -png docs/bench-compare-scaling.png -json bench/results/scaling-results.json -command "make bench-compare-scaling BENCH_FLAGS='$(BENCH_FLAGS)'" $(BENCH_FLAGS)

# Compatibility (issue 26; docs/compatibility.md): the official clients' own test suites and
# our modules over the official clients, run against Magnetar by tests/compat/runner in a
# private network namespace where the default ports the clients' tests dial are free (needs
# root), each against a standalone started as that client's CI starts Pulsar. Not in CI (an
# hour and more); its fast subset (TestFastSubset) is in make test. Everything third-party
# is fetched at run time into ~/.cache (Go module proxy, PyPI, Maven Central), never
# committed. Results: $(COMPAT_OUT)/<suite group>/results.md.
#   compat-go: pulsar-client-go's ./pulsar, ./pulsaradmin/pkg/admin and clustered suites
#   compat-python: our module over pulsar-client from PyPI (tests/compat/python)
#   compat-python-official: the client's own tests/ from PULSAR_CLIENT_PYTHON_SRC (a checkout
#     of apache/pulsar-client-python; cloned at run time when GitHub is reachable)
#   compat-java: the Java client, admin and pulsar-perf, and the Spring Boot and Quarkus apps
# COMPAT_FLAGS passes runner flags, e.g. COMPAT_FLAGS='-only pulsar=^TestReader'.
# -no-security turns the CI configs' TLS and authentication off through the environment (the
# roles have them since issue 16, so it is off by default).
COMPAT_OUT      ?= /tmp/magnetar-compat
COMPAT_FLAGS    ?=
COMPAT_RUN      = $(GO) run ./tests/compat/runner -magnetar $(BIN) -repo $(CURDIR) $(COMPAT_FLAGS)
.PHONY: compat compat-go compat-python compat-python-official compat-java
compat: compat-go compat-python compat-python-official compat-java

compat-go: build
	$(COMPAT_RUN) -out $(COMPAT_OUT)/go -suites pulsar,admin,clustered

compat-python: build
	$(COMPAT_RUN) -out $(COMPAT_OUT)/python -suites python

compat-python-official: build
	$(COMPAT_RUN) -out $(COMPAT_OUT)/python-official -suites python-official

compat-java: build
	$(COMPAT_RUN) -out $(COMPAT_OUT)/java -suites java,spring,quarkus

# Publish throughput and send latency plaintext vs TLS vs TLS + token (issue 16): the Go
# client against one secure standalone, 1 KiB messages, msg/s, MB/s, p50/p99 per way in
# (internal/standalone/security_bench_test.go). Results go in docs/benchmarks.md, e.g.
#   make bench-security BENCH_SECURITY_TIME=200000x BENCH_SECURITY_COUNT=5
BENCH_SECURITY_TIME  ?= 10s
BENCH_SECURITY_COUNT ?= 1
.PHONY: bench-security
bench-security:
	$(GO) test -tags $(TAGS) -run '^$$' -bench '^BenchmarkPublishSecurity$$' -benchtime $(BENCH_SECURITY_TIME) -count $(BENCH_SECURITY_COUNT) -timeout 60m ./internal/standalone/

# Standalone start to ready (issue 24): from exec until the binary port answers a CONNECT and
# a LOOKUP of a new topic, on a fresh and on a restarted data directory, median of 10 each,
# timing the static release binary. Results go in docs/benchmarks.md.
.PHONY: bench-startup
bench-startup: build
	$(GO) test -tags $(TAGS) -run '^$$' -bench StandaloneReady -benchtime 1x ./tests/e2e/ -args -startup-binary $(CURDIR)/$(BIN)

# Kafka protocol compatibility (issue 19): Kafka 4.x's own tools, Kafka Connect standalone
# (both from Maven Central into ~/.cache/magnetar-maven, run on this machine's Java) and
# KafkaJS (npm, into ~/.cache/magnetar-npm) against the Kafka front end, plus the Apache
# Kafka KRaft helper itself (internal/testenv). The first run fetches ~55 MB of jars.
.PHONY: kafka-compat
kafka-compat:
	$(GO) test -tags $(TAGS),kafkacompat -count=1 -timeout 30m -run 'Kafka|Connect' ./internal/kafka/... ./internal/testenv/... ./tests/e2e/

# Kafka comparison (issue 19): Magnetar over its Kafka listener (franz-go), the same
# standalone over the Pulsar protocol, and Apache Kafka (Maven Central, KRaft, one JVM) on
# this machine, interleaved, same durability both sides (D1 fsync before ack: Kafka
# log.flush.interval.messages=1; D2 no fsync). Report: docs/bench-compare-kafka.md.
# BENCH_FLAGS as for bench-compare, e.g. BENCH_FLAGS='-workloads W2,W3 -measure 60s'.
.PHONY: bench-compare-kafka
bench-compare-kafka: build
	cd bench && $(GO) run ./cmd/bench-compare -repo .. -peer kafka -out docs/bench-compare-kafka.md -png docs/bench-compare-kafka.png -json bench/results/kafka-results.json -command "make bench-compare-kafka BENCH_FLAGS='$(BENCH_FLAGS)'" $(BENCH_FLAGS)

# Helm chart (deploy/helm/magnetar, issue 24): helm lint and helm template | kubeconform with
# the default values and each deploy/helm/magnetar/ci/*.yaml. helm and kubeconform are built
# from the Go module proxy and Kubernetes' schemas come from PyPI, cached in
# ~/.cache/magnetar-helm (the first run builds helm: a few minutes).
.PHONY: helm-check
helm-check:
	GO=$(GO) deploy/helm/check.sh

# The image without a container engine (issue 24; none runs here): the release build put
# alone into a distroless-shaped root and started chrooted in it as the Dockerfile's USER,
# with its ENTRYPOINT, CMD and WORKDIR (tests/e2e/imagefs_test.go). Needs root.
.PHONY: image-check
image-check:
	$(GO) test -tags $(TAGS),imagecheck -count=1 -v -run '^TestImageFilesystem$$' ./tests/e2e/

# Functions (issue 20): messages/s through an identity function per runtime against a plain
# consume->produce client in one run, and memory per idle instance. Not for a loaded machine.
# FUNCTIONS_BENCH_MESSAGES sets the messages per run; FUNCTIONS_BENCH_PYTHON=1 adds Python.
FUNCTIONS_BENCH_MESSAGES ?= 50000
.PHONY: bench-functions
bench-functions:
	FUNCTIONS_BENCH_MESSAGES=$(FUNCTIONS_BENCH_MESSAGES) $(GO) test -tags $(TAGS) -run '^$$' -bench BenchmarkFunctions -benchtime 1x -timeout 30m ./internal/functions/

# Web console (internal/console, issue 24). The built assets in internal/console/dist are
# committed (so `make build` needs only Go) and reproducible: `make console` rebuilds them
# from internal/console/web/src with Node (no npm packages), and make test fails when they
# differ. `make console-test` runs the browser test: playwright-core (npm, cached in
# ~/.cache/magnetar-console) driving Debian's chromium (apt-get) against a real standalone,
# and writes the screenshots in docs/console/.
.PHONY: console console-test
console:
	node internal/console/web/build.mjs

console-test:
	CONSOLE_SHOTS=$(CURDIR)/docs/console $(GO) test -tags $(TAGS),consoletest -count=1 -v ./tests/console/

# Tiered storage benchmark (issue 18): bookie catch-up vs offload vs catch-up from S3
# (versitygw, built once into ~/.cache/magnetar-versitygw). Results: docs/benchmarks.md.
OFFLOAD_BENCH_FLAGS ?= -offload-backlog-mb 256
.PHONY: bench-offload
bench-offload:
	$(GO) test -tags $(TAGS) -timeout 2h -run '^$$' -bench BenchmarkRealOffload -benchtime 1x ./internal/managedledger/realtest/ $(OFFLOAD_BENCH_FLAGS)

# The filesystem offload driver against a real HDFS namenode and datanode (issue 18):
# Hadoop's MiniDFSCluster from Maven Central (hadoop-client-minicluster, fetched once into
# ~/.cache/magnetar-hadoop) on this machine's Java. Not in make test: the JVM takes ~40 s.
.PHONY: offload-hdfs
offload-hdfs:
	$(GO) test -tags $(TAGS),hdfs -count=1 -timeout 20m -run 'TestHDFS' -v ./internal/offload/

# IO connectors' long suites (issue 21): the kafka source and sink against Apache Kafka from
# Maven Central, and the standalone SIGKILLed twice under a CDC -> JDBC stream. The database,
# Redis, HTTP and S3 tests run in make test.
.PHONY: io-compat
io-compat:
	$(GO) test -tags $(TAGS),iocompat -count=1 -timeout 30m ./internal/io/...
	$(GO) test -tags $(TAGS),iocompat -count=1 -timeout 30m -run 'TestIOWorker' ./tests/e2e/

# IO benchmark (issue 21), against a real PostgreSQL 15 (Debian) and an in-process standalone
# (internal/io/e2e/bench_test.go): CDC rows/s from debezium-postgres under a pgbench load vs
# the database's own write rate, commit-to-consumer latency p50/p99; the jdbc-postgres sink's
# rows/s vs a plain batched INSERT of the same rows. Both check that every row arrived.
# Results go in docs/benchmarks.md.
IO_BENCH_SECONDS   ?= 30
IO_BENCH_SINK_ROWS ?= 200000
.PHONY: bench-io
bench-io:
	IO_BENCH_SECONDS=$(IO_BENCH_SECONDS) IO_BENCH_SINK_ROWS=$(IO_BENCH_SINK_ROWS) $(GO) test -tags $(TAGS) -run '^$$' -bench '^BenchmarkIO' -benchtime 1x -timeout 30m ./internal/io/e2e/

# SQL over topics (issue 22): SQL_BENCH_MESSAGES JSON messages (the issue's figure: 10
# million) in a standalone process; count(*) and a filtered aggregation against a Go reader
# client, the share of entries a 1% time range reads, publish p99 during a scan. Results go
# in docs/benchmarks.md.
SQL_BENCH_MESSAGES ?= 10000000
.PHONY: bench-sql
bench-sql:
	SQL_BENCH_MESSAGES=$(SQL_BENCH_MESSAGES) $(GO) test -tags $(TAGS) -run '^$$' -bench BenchmarkSQL -benchtime 1x -timeout 3h -v ./tests/e2e/

# bench-txn: transactional publish (100 messages per transaction) against plain publish in
# one run, and commit latency p50/p99 (issue 17). Results go in docs/benchmarks.md.
BENCH_TXN_N     ?= 200000
.PHONY: bench-txn
bench-txn:
	$(GO) test -tags $(TAGS) -run '^$$' -bench TxnPublish -benchtime $(BENCH_TXN_N)x ./internal/broker/

# Lakehouse (issue 23): a real standalone SIGKILLed under load, the table read by PyIceberg
# (PyPI, into ~/.cache/magnetar-pyiceberg) through the REST catalog from a real S3 server.
.PHONY: lakehouse-e2e
lakehouse-e2e:
	MAGNETAR_LAKEHOUSE_E2E=1 $(GO) test -tags $(TAGS) -count=1 -v -timeout 30m -run '^TestLakehouse|^TestPyIceberg' ./tests/e2e/ ./internal/lakehouse/
