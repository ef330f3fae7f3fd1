package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/magnetar-io/magnetar/internal/testbin"
)

// The runner re-executes its own binary inside the namespaces; under `go test` that binary
// is the test binary, which then runs the runner instead of the tests.
func TestMain(m *testing.M) {
	if os.Getenv(innerEnv) == "1" {
		os.Exit(run(os.Args[1:]))
	}
	os.Exit(m.Run())
}

// fastSubset is the part of make compat that runs in make test: our Python module over the
// official Python client, and the official Go client's own tests of the core paths (produce
// and consume, every subscription type, batching, compression, acknowledgements,
// redelivery, readers and seeks, schemas, partitions, admin), each against a standalone
// started with the client CI's standalone.conf. The whole list runs in `make compat`.
var fastSubset = []string{
	"pulsar=^(TestProducerConsumer|TestProducerNoTopic|TestBatchMessageReceive|" +
		"TestConsumerCompression|TestConsumerCompressionWithBatches|TestConsumerBatchCumulativeAck|TestBatchIndexAck|" +
		"TestConsumerSeek|TestConsumerShared|TestConsumerNack|TestDLQ|" +
		"TestReaderHasNext|TestJsonSchema|TestAvroSchema|TestPartitionTopicsConsumerPubSub|TestProducerMetadata|" +
		"TestConsumerMetadata|TestProtoNativeSchema|TestTopicTermination|TestConsumerKeyShared|TestBytesSchema|TestNamespaceTopicsWebURL|" +
		// Security (issue 16): every TLS, token, basic and OAuth2 test of client_impl_test.go,
		// with the CI config's TLS listeners, providers and authorization on.
		"TestTLS.*|TestToken.*|TestOAuth2Auth|TestHTTPS.*|TestHTTPTokenAuth.*|TestHTTPOAuth2.*|TestHTTPBasicAuth|" +
		"TestServiceUrlTLS.*|TestWebServiceUrlTLS.*)$",
	"admin=^(TestCreateTopic|TestPartitionState|TestPeekMessagesWithProperties|TestGetMessageByID|TestNamespaces_Persistence|" +
		"TestBrokerHealthCheckWithTopicVersion|TestGetLeaderBroker|TestGetAllActiveBrokers|TestTopicStatsTimestamps|" +
		"TestUpdateDynamicConfigurationWithCustomURL)$",
	"python=test_messaging.py::test_(produce_consume|send_async|compression\\[compression[12]|shared|exclusive|key_shared|" +
		"negative_ack|dead_letter|batching|chunking|partitioned|reader|table_view)|test_schema.py::test_(record|incompatible)",
}

// TestFastSubset runs the fast subset through the real runner (root and a private network
// namespace, as make compat) and fails on any failed test, listing them. Tests known to
// fail until the part of another issue they need lands are listed in knownFailures with
// the reason, and must fail (so the list shrinks when they pass).
func TestFastSubset(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Fatal("the compatibility suites need root: they run in a private network namespace where the client tests' default ports are free")
	}
	if _, err := exec.LookPath("python3"); err != nil {
		t.Fatal("python3 not found: the Python suite needs it (and pip, to install pulsar-client from PyPI)")
	}
	dir := t.TempDir()
	bin, err := testbin.Build(dir)
	if err != nil {
		t.Fatal(err)
	}
	repo, err := filepath.Abs("../../..")
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out")
	args := []string{"-magnetar", bin, "-repo", repo, "-out", out, "-suites", "pulsar,admin,python"}
	for _, f := range fastSubset {
		args = append(args, "-only", f)
	}
	code := run(args)
	b, err := os.ReadFile(filepath.Join(out, "results.json"))
	if err != nil {
		t.Fatalf("runner exit %d and no results: %v", code, err)
	}
	var all []result
	if err := json.Unmarshal(b, &all); err != nil {
		t.Fatal(err)
	}
	ran := 0
	for _, r := range all {
		ran++
		key := r.Suite + "/" + r.Test
		known, isKnown := knownFailures[key]
		switch {
		case r.Outcome == passed && isKnown:
			t.Errorf("%s passes now: remove it from knownFailures (%s)", key, known)
		case r.Outcome == failed || r.Outcome == timedout:
			if !isKnown {
				t.Errorf("%s %s: %s (log %s)", key, r.Outcome, r.Reason, r.Log)
			}
		}
	}
	if ran < 35 {
		t.Fatalf("only %d tests ran; the subset has more: %+v", ran, all)
	}
	t.Logf("%d tests of the official clients' suites and ours ran", ran)
}

// knownFailures are fast-subset tests that fail for a cause recorded in
// docs/compatibility.md whose fix lands with another issue's restructuring.
var knownFailures = map[string]string{}
