package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
	pa "github.com/apache/pulsar-client-go/pulsaradmin/pkg/admin"
	paconfig "github.com/apache/pulsar-client-go/pulsaradmin/pkg/admin/config"
	"github.com/apache/pulsar-client-go/pulsaradmin/pkg/utils"
)

// TestFunctionsWorkerYAMLConfig starts `magnetar functions-worker --config
// functions_worker.yml` with a file in the shape of Pulsar's own (its key names, nesting,
// the Java runtime factory block, workerPortTls with tlsEnabled false), against a standalone
// whose own worker is off: the worker takes its id, hostname and cluster from the file,
// reports the Java-only keys by name in its one warning, serves no HTTPS, and runs a Go
// function end to end.
func TestFunctionsWorkerYAMLConfig(t *testing.T) {
	dir := t.TempDir()
	mdPort := freeTCPPort(t)
	env := functionsEnv()
	_, rec := startProc(t, "magnetar standalone ready", env, "standalone", "--log-format", "json", "--data-dir", filepath.Join(dir, "sa"),
		"--metadata-store", "etcd", "--metadata-listen", "http://127.0.0.1:"+strconv.Itoa(mdPort), "--metadata-peer", "http://127.0.0.1:0",
		"--bookie-address", "127.0.0.1:0", "--bind-address", "127.0.0.1", "--port", "0", "--http-port", "0", "--functions-worker=false")
	broker, brokerHTTP := trimScheme(rec["broker"]), trimScheme(rec["http"])
	tlsPort := freeTCPPort(t)
	yml := fmt.Sprintf(`# Pulsar's functions_worker.yml shape
workerId: yml-worker
workerHostname: localhost
workerPort: 0
workerPortTls: %d
configurationMetadataStoreUrl: zk:localhost:2181
metadataStoreSessionTimeoutMillis: 30000
numFunctionPackageReplicas: 1
downloadDirectory: %s
useTls: false
pulsarServiceUrl: pulsar://%s
pulsarWebServiceUrl: http://%s
pulsarFunctionsNamespace: public/functions
pulsarFunctionsCluster: standalone
functionMetadataTopicName: metadata
schedulerClassName: "org.apache.pulsar.functions.worker.scheduler.RoundRobinScheduler"
functionAssignmentTopicName: "assignments"
rebalanceCheckFreqSec: -1
functionRuntimeFactoryClassName: org.apache.pulsar.functions.runtime.process.ProcessRuntimeFactory
functionRuntimeFactoryConfigs:
    logDirectory: logs/
    javaInstanceJarLocation:
    pythonInstanceLocation:
authenticationEnabled: false
authorizationEnabled: false
authenticationProviders:
authorizationProvider: org.apache.pulsar.broker.authorization.PulsarAuthorizationProvider
superUserRoles: [admin, ops]
proxyRoles:
tlsEnabled: false
tlsCertificateFilePath:
tlsKeyFilePath:
additionalEnabledConnectorUrlPatterns: []
properties:
    tokenPublicAlg: "RS256"
configurationStoreServers: localhost:2181
`, tlsPort, filepath.Join(dir, "download"), broker, brokerHTTP)
	file := filepath.Join(dir, "functions_worker.yml")
	if err := os.WriteFile(file, []byte(yml), 0o644); err != nil {
		t.Fatal(err)
	}
	w, wrec := startProc(t, "magnetar functions worker ready", env, "functions-worker", "--log-format", "json",
		"--config", file, "--metadata-url", "etcd://127.0.0.1:"+strconv.Itoa(mdPort), "--bind-address", "127.0.0.1",
		"--data-dir", filepath.Join(dir, "w"))
	if wrec["workerId"] != "yml-worker" || wrec["https"] != "" {
		t.Fatalf("ready record %v", wrec)
	}
	var warned map[string]any
	for _, line := range strings.Split(w.log(), "\n") {
		var r map[string]any
		if json.Unmarshal([]byte(line), &r) == nil && strings.HasPrefix(fmt.Sprint(r["msg"]), "configuration keys that do not apply") {
			warned = r
		}
	}
	var notApplicable []string
	if keys, ok := warned["pulsarKeys"].([]any); ok {
		for _, k := range keys {
			notApplicable = append(notApplicable, fmt.Sprint(k))
		}
	}
	for _, k := range []string{"functionRuntimeFactoryClassName", "functionRuntimeFactoryConfigs.logDirectory", "pulsarFunctionsNamespace", "schedulerClassName"} {
		if !slices.Contains(notApplicable, k) {
			t.Errorf("%s not in the warning of keys that do not apply: %v", k, warned)
		}
	}
	workerHTTP := trimScheme(wrec["http"])
	resp, err := http.Get("http://" + workerHTTP + "/admin/v2/worker/cluster")
	if err != nil {
		t.Fatal(err)
	}
	var cluster []map[string]any
	err = json.NewDecoder(resp.Body).Decode(&cluster)
	resp.Body.Close()
	if err != nil || len(cluster) != 1 || cluster[0]["workerId"] != "yml-worker" || cluster[0]["workerHostname"] != "localhost" {
		t.Fatalf("worker cluster %v (%v)", cluster, err)
	}

	admin, err := pa.New(&paconfig.Config{WebServiceURL: "http://" + workerHTTP})
	if err != nil {
		t.Fatal(err)
	}
	in, out := "persistent://public/default/yml-in", "persistent://public/default/yml-out"
	fn := goTestFunction(t)
	if err := admin.Functions().CreateFunc(&utils.FunctionConfig{
		Tenant: "public", Namespace: "default", Name: "yml", Inputs: []string{in}, Output: out, Go: &fn,
		Parallelism: 1, SubscriptionPosition: "Earliest", UserConfig: map[string]any{"mode": "exclaim"},
	}, fn); err != nil {
		t.Fatal(err)
	}
	client, err := pulsar.NewClient(pulsar.ClientOptions{URL: "pulsar://" + broker})
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	cons, err := client.Subscribe(pulsar.ConsumerOptions{Topic: out, SubscriptionName: "check", SubscriptionInitialPosition: pulsar.SubscriptionPositionEarliest})
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	prod, err := client.CreateProducer(pulsar.ProducerOptions{Topic: in})
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	if _, err := prod.Send(context.Background(), &pulsar.ProducerMessage{Payload: []byte("hello")}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	m, err := cons.Receive(ctx)
	if err != nil || string(m.Payload()) != "hello!" {
		t.Fatalf("output %v: %v", m, err)
	}
}
