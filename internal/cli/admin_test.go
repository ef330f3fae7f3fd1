package cli

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/magnetar-io/magnetar/internal/config"
	"github.com/magnetar-io/magnetar/internal/standalone"
	"github.com/magnetar-io/magnetar/internal/testbin"
)

// The admin CLI tests run the real binary against one in-process standalone; both are
// made on first use (other tests of this package need neither) and torn down in TestMain.
var shared struct {
	once   sync.Once
	err    error
	dir    string
	binary string
	sa     *standalone.Standalone
}

func TestMain(m *testing.M) {
	code := m.Run()
	if shared.sa != nil {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		_ = shared.sa.Close(ctx)
		cancel()
	}
	if shared.dir != "" {
		_ = os.RemoveAll(shared.dir)
	}
	os.Exit(code)
}

func adminSetup(t *testing.T) (binary, adminURL string) {
	t.Helper()
	shared.once.Do(func() {
		if shared.dir, shared.err = os.MkdirTemp("", "cli-admin-"); shared.err != nil {
			return
		}
		if shared.binary, shared.err = testbin.Build(shared.dir); shared.err != nil {
			return
		}
		cfg := config.DefaultStandaloneConfig()
		cfg.DataDir = filepath.Join(shared.dir, "data")
		cfg.MetadataListenClient = "http://127.0.0.1:0"
		cfg.MetadataListenPeer = "http://127.0.0.1:0"
		cfg.BookieAddress = "127.0.0.1:0"
		cfg.Broker.BindAddress = "127.0.0.1"
		cfg.Broker.ServicePort = 0
		cfg.Broker.WebServicePort = 0
		cfg.Broker.Packages.Enabled = true // TestAdminPackagesCLI
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		shared.sa, shared.err = standalone.Start(ctx, cfg, nil)
	})
	if shared.err != nil {
		t.Fatal(shared.err)
	}
	return shared.binary, "http://" + shared.sa.HTTPAddr()
}

// adminOK runs magnetarAdmin and fails the test unless it exits 0; it returns stdout.
func adminOK(t *testing.T, args ...string) string {
	t.Helper()
	code, out, errOut := magnetarAdmin(t, args...)
	if code != 0 {
		t.Fatalf("%v: exit %d: %s", args, code, errOut)
	}
	return out
}

// magnetarAdmin runs `magnetar admin --admin-url URL args...` and returns exit code, stdout
// and stderr.
func magnetarAdmin(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	bin, u := adminSetup(t)
	cmd := exec.Command(bin, append([]string{"admin", "--admin-url", u}, args...)...)
	var out, errb strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return code, out.String(), errb.String()
}

func TestAdminCLI(t *testing.T) {
	ok := func(args ...string) string {
		t.Helper()
		code, out, errOut := magnetarAdmin(t, args...)
		if code != 0 {
			t.Fatalf("%v: exit %d: %s", args, code, errOut)
		}
		return out
	}
	if out := ok("clusters", "list"); strings.TrimSpace(out) != "standalone" {
		t.Fatalf("clusters list: %q", out)
	}
	ok("tenants", "create", "acme", "-r", "ops", "-c", "standalone")
	var ti map[string][]string
	if err := json.Unmarshal([]byte(ok("tenants", "get", "acme", "-o", "json")), &ti); err != nil || ti["adminRoles"][0] != "ops" {
		t.Fatalf("tenant json: %v %v", ti, err)
	}
	ok("namespaces", "create", "acme/app")
	ok("namespaces", "set-retention", "acme/app", "--size", "1G", "--time", "3d")
	if out := ok("namespaces", "get-retention", "acme/app"); !strings.Contains(out, "retentionSizeInMB") || !strings.Contains(out, "1024") {
		t.Fatalf("retention: %q", out)
	}
	has := func(out string, want ...string) {
		t.Helper()
		for _, w := range want {
			if !strings.Contains(out, w) {
				t.Fatalf("want %q in %q", w, out)
			}
		}
	}
	ok("namespaces", "set-backlog-quota", "acme/app", "-l", "10G", "-p", "producer_request_hold")
	has(ok("namespaces", "get-backlog-quotas", "acme/app", "-o", "json"), "producer_request_hold", "10737418240")
	ok("namespaces", "remove-backlog-quota", "acme/app")
	has(ok("namespaces", "get-backlog-quotas", "acme/app", "-o", "json"), "{}")
	ok("namespaces", "set-persistence", "acme/app", "-e", "1", "-w", "1", "-a", "1")
	has(ok("namespaces", "get-persistence", "acme/app", "-o", "json"), `"bookkeeperAckQuorum": 1`)
	ok("namespaces", "grant-permission", "acme/app", "--role", "app", "--actions", "produce,consume")
	has(ok("namespaces", "permissions", "acme/app", "-o", "json"), `"produce",`)
	ok("namespaces", "revoke-permission", "acme/app", "--role", "app")
	ok("namespaces", "set-auto-topic-creation", "acme/app", "-e", "-t", "partitioned", "-n", "3")
	has(ok("namespaces", "get-auto-topic-creation", "acme/app", "-o", "json"), `"defaultNumPartitions": 3`)
	ok("namespaces", "remove-auto-topic-creation", "acme/app")
	if code, _, errOut := magnetarAdmin(t, "namespaces", "set-backlog-quota", "acme/app", "-l", "1G", "-p", "drop_everything"); code != 1 || !strings.Contains(errOut, "400") {
		t.Fatalf("bad quota policy: exit %d %q", code, errOut)
	}
	ok("topics", "create-partitioned-topic", "acme/app/orders", "-p", "2")
	ok("topics", "create", "persistent://acme/app/events")
	if out := ok("topics", "list", "acme/app"); !strings.Contains(out, "persistent://acme/app/events\n") || !strings.Contains(out, "orders-partition-1") {
		t.Fatalf("topics list: %q", out)
	}
	if out := ok("topics", "partitioned-terminate", "acme/app/orders", "-o", "json"); !strings.Contains(out, `"0": {`) || !strings.Contains(out, `"1": {`) {
		t.Fatalf("partitioned-terminate: %q", out)
	}
	if code, _, errOut := magnetarAdmin(t, "topics", "partitioned-terminate", "acme/app/events"); code != 1 || !strings.Contains(errOut, "405") {
		t.Fatalf("partitioned-terminate of a non-partitioned topic: exit %d %q", code, errOut)
	}
	ok("topics", "create-subscription", "acme/app/events", "-s", "audit", "-m", "earliest")
	if out := ok("topics", "subscriptions", "acme/app/events"); strings.TrimSpace(out) != "audit" {
		t.Fatalf("subscriptions: %q", out)
	}
	var st map[string]any
	if err := json.Unmarshal([]byte(ok("topics", "stats", "acme/app/events", "-o", "json")), &st); err != nil || st["subscriptions"] == nil {
		t.Fatalf("stats: %v %v", st, err)
	}
	ok("topics", "skip", "acme/app/events", "-s", "audit", "-n", "1")
	ok("topics", "reset-cursor", "acme/app/events", "-s", "audit", "-t", "1h")
	ok("namespaces", "clear-backlog", "acme/app")
	rng := strings.TrimSpace(ok("topics", "bundle-range", "acme/app/events"))
	ok("namespaces", "clear-backlog", "acme/app", "-b", rng, "-s", "audit")
	ok("namespaces", "unsubscribe", "acme/app", "--bundle", rng, "-s", "nobody")
	if code, _, errOut := magnetarAdmin(t, "namespaces", "clear-backlog", "acme/app", "-b", "0x00000001_0x00000002"); code != 1 || !strings.Contains(errOut, "404") {
		t.Fatalf("clear-backlog of a bundle the namespace lacks: exit %d %q", code, errOut)
	}
	if code, _, errOut := magnetarAdmin(t, "namespaces", "delete-bundle", "acme/app", "-b", rng); code != 1 || !strings.Contains(errOut, "Cannot delete non empty bundle") {
		t.Fatalf("delete-bundle of a bundle with a topic: exit %d %q", code, errOut)
	}
	ok("namespaces", "delete-bundle", "acme/app", "-b", rng, "-f")
	if code, _, errOut := magnetarAdmin(t, "namespaces", "delete", "acme/app", "-f"); code != 1 || !strings.Contains(errOut, "Broker doesn't allow forced deletion of namespaces") {
		t.Fatalf("forced delete, not allowed by the broker: exit %d %q", code, errOut)
	}
	ok("namespaces", "unload", "acme/app")
	ok("topics", "unsubscribe", "acme/app/events", "-s", "audit")
	if out := ok("brokers", "healthcheck"); strings.TrimSpace(out) != "ok" {
		t.Fatalf("healthcheck: %q", out)
	}
	if out := ok("bookies", "list-bookies", "-o", "json"); !strings.Contains(out, `"bookieId"`) {
		t.Fatalf("list-bookies: %q", out)
	}
	if out := ok("brokers", "list", "standalone"); !strings.Contains(out, shared.sa.HTTPAddr()) {
		t.Fatalf("brokers list: %q", out)
	}
	if code, _, errOut := magnetarAdmin(t, "namespaces", "delete", "acme/app"); code != 1 || !strings.Contains(errOut, "409") {
		t.Fatalf("delete namespace with topics: exit %d %q", code, errOut)
	}
	ok("topics", "delete-partitioned-topic", "acme/app/orders")
	ok("topics", "delete", "acme/app/events")
	ok("namespaces", "delete", "acme/app")
	// -f sends ?force=true: refused here, where forceDeleteTenantAllowed is off (Pulsar's 405).
	if code, _, errOut := magnetarAdmin(t, "tenants", "delete", "-f", "acme"); code != 1 || !strings.Contains(errOut, "Broker doesn't allow forced deletion of tenants") {
		t.Fatalf("tenants delete -f: exit %d %q", code, errOut)
	}
	ok("tenants", "delete", "acme")

	// MAGNETAR_ADMIN_URL stands in for --admin-url.
	bin, u := adminSetup(t)
	env := exec.Command(bin, "admin", "clusters", "list")
	env.Env = append(os.Environ(), "MAGNETAR_ADMIN_URL="+u)
	if out, err := env.Output(); err != nil || strings.TrimSpace(string(out)) != "standalone" {
		t.Fatalf("MAGNETAR_ADMIN_URL: %v %q", err, out)
	}

	// Errors: the REST reason reaches the user with exit 1; bad arguments exit 2.
	if code, _, errOut := magnetarAdmin(t, "tenants", "get", "nosuch"); code != 1 || !strings.Contains(errOut, "404") {
		t.Fatalf("missing tenant: exit %d %q", code, errOut)
	}
	if code, _, errOut := magnetarAdmin(t, "schemas", "get", "public/default/nosuch"); code != 1 || !strings.Contains(errOut, "schema not found") {
		t.Fatalf("schemas get: exit %d %q", code, errOut)
	}
	if code, _, errOut := magnetarAdmin(t, "topics", "stats", "a/b/c/d"); code != 2 || !strings.Contains(errOut, "invalid topic") {
		t.Fatalf("bad topic: exit %d %q", code, errOut)
	}
}

// magnetarRun runs the built binary with args.
func magnetarRun(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	bin, _ := adminSetup(t)
	cmd := exec.Command(bin, args...)
	var out, errb strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode(), out.String(), errb.String()
	} else if err != nil {
		t.Fatal(err)
	}
	return 0, out.String(), errb.String()
}

func TestPerfProduceConsume(t *testing.T) {
	adminSetup(t)
	svc := "pulsar://" + shared.sa.BrokerAddr()
	topic := "persistent://public/default/perf-cli"
	if code, _, errOut := magnetarAdmin(t, "topics", "create-subscription", topic, "-s", "perf", "-m", "earliest"); code != 0 {
		t.Fatalf("create subscription: %s", errOut)
	}
	var r struct {
		Messages int64   `json:"messages"`
		Errors   int64   `json:"errors"`
		P99      float64 `json:"latencyP99Ms"`
	}
	code, out, errOut := magnetarRun(t, "perf", "produce", topic, "-u", svc, "-r", "0", "-m", "300", "-s", "100", "--interval", "0", "--json")
	if code != 0 || json.Unmarshal([]byte(out), &r) != nil || r.Messages != 300 || r.Errors != 0 || r.P99 <= 0 {
		t.Fatalf("produce: exit %d %q %q %+v", code, out, errOut, r)
	}
	code, out, errOut = magnetarAdmin(t, "topics", "peek-messages", topic, "-s", "perf", "-n", "2", "-o", "json")
	if code != 0 || strings.Count(out, `"messageId"`) != 2 {
		t.Fatalf("peek: exit %d, %d messages, %.300q", code, strings.Count(out, `"messageId"`), errOut)
	}
	if code, out, errOut := magnetarAdmin(t, "topics", "examine-message", topic, "-i", "earliest", "-m", "1"); code != 0 || !strings.Contains(out, "Message ID: ") {
		t.Fatalf("examine-message: exit %d %.200q %q", code, out, errOut)
	}
	code, out, errOut = magnetarRun(t, "perf", "consume", topic, "-u", svc, "-s", "perf", "-m", "300", "--interval", "0")
	if code != 0 || !strings.Contains(out, "Aggregated throughput stats --- 300 records received") || !strings.Contains(out, "99.9pct") {
		t.Fatalf("consume: exit %d %q %q", code, out, errOut)
	}
}

// TestAdminDynamicConfig sets, reads and deletes a dynamic key through the real binary.
func TestAdminDynamicConfig(t *testing.T) {
	run := func(args ...string) string {
		t.Helper()
		code, out, errOut := magnetarAdmin(t, args...)
		if code != 0 {
			t.Fatalf("%v: exit %d: %s", args, code, errOut)
		}
		return out
	}
	if out := run("brokers", "list-dynamic-config"); !strings.Contains(out, "dispatcherMaxReadBatchSize") {
		t.Fatalf("list-dynamic-config: %q", out)
	}
	run("brokers", "update-dynamic-config", "--config", "dispatcherMaxReadBatchSize", "--value", "42")
	var values map[string]string
	if err := json.Unmarshal([]byte(run("brokers", "get-all-dynamic-config", "-o", "json")), &values); err != nil || values["dispatcherMaxReadBatchSize"] != "42" {
		t.Fatalf("after update: %v %v", values, err)
	}
	if code, _, errOut := magnetarAdmin(t, "brokers", "update-dynamic-config", "--config", "brokerServicePort", "--value", "1"); code == 0 || !strings.Contains(errOut, "dynamic") {
		t.Fatalf("static key: exit %d, %q", code, errOut)
	}
	run("brokers", "delete-dynamic-config", "--config", "dispatcherMaxReadBatchSize")
	if err := json.Unmarshal([]byte(run("brokers", "get-all-dynamic-config", "-o", "json")), &values); err != nil || values["dispatcherMaxReadBatchSize"] != "100" {
		t.Fatalf("after delete: %v %v", values, err)
	}
}
