package functions_test

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
	pa "github.com/apache/pulsar-client-go/pulsaradmin/pkg/admin"
	paconfig "github.com/apache/pulsar-client-go/pulsaradmin/pkg/admin/config"
	"github.com/apache/pulsar-client-go/pulsaradmin/pkg/utils"

	"github.com/magnetar-io/magnetar/internal/config"
	"github.com/magnetar-io/magnetar/internal/standalone"
)

var (
	sa      *standalone.Standalone
	testDir string
)

// testWorkerConfig makes failures visible within seconds instead of Pulsar's minutes.
func testWorkerConfig() config.FunctionsWorkerConfig {
	c := config.DefaultFunctionsWorkerConfig()
	c.RescheduleTimeoutMs = 4000
	c.FailureCheckFreqMs = 250
	c.InstanceLivenessCheckFreqMs = 1000
	c.SessionTimeoutMs = 2000
	c.MaxRestartBackoffMs = 2000
	// The race detector makes compiling a Go-built module take a minute; the interpreter
	// starts it in seconds. The benchmark runs the compiler.
	c.WasmCompiler = false
	c.WasmMaxInvocationMs = 5000
	return c
}

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "func-functions-test-")
	if err != nil {
		panic(err)
	}
	testDir = dir
	cfg := config.DefaultStandaloneConfig()
	cfg.DataDir = filepath.Join(dir, "standalone")
	cfg.MetadataListenClient = "http://127.0.0.1:0"
	cfg.MetadataListenPeer = "http://127.0.0.1:0"
	cfg.BookieAddress = "127.0.0.1:0"
	cfg.Broker.BindAddress = "127.0.0.1"
	cfg.Broker.ServicePort = 0
	cfg.Broker.WebServicePort = 0
	cfg.Functions = testWorkerConfig()
	cfg.Broker.Packages.Enabled = true // TestFunctionFromPackageURL
	flag.Parse()
	if f := flag.Lookup("test.bench"); f != nil && f.Value.String() != "" {
		cfg.Functions.WasmCompiler = true // benchmarks measure compiled WASM
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	var logger *slog.Logger
	if os.Getenv("FUNCTIONS_TEST_LOG") != "" {
		logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	}
	sa, err = standalone.Start(ctx, cfg, logger)
	cancel()
	if err != nil {
		fmt.Fprintln(os.Stderr, "start standalone:", err)
		os.Exit(1)
	}
	code := m.Run()
	ctx, cancel = context.WithTimeout(context.Background(), time.Minute)
	_ = sa.Close(ctx)
	cancel()
	_ = os.RemoveAll(dir)
	os.Exit(code)
}

var (
	buildOnce sync.Once
	goFnPath  string
	buildErr  error
)

// goFunction builds testdata/gofn once.
func goFunction(t testing.TB) string {
	t.Helper()
	buildOnce.Do(func() {
		goFnPath = filepath.Join(testDir, "gofn")
		out, err := exec.Command("go", "build", "-o", goFnPath, "./testdata/gofn").CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("building the test function: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return goFnPath
}

func adminClient(t testing.TB) pa.Client {
	t.Helper()
	c, err := pa.New(&paconfig.Config{WebServiceURL: "http://" + sa.HTTPAddr()})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func pulsarClient(t testing.TB) pulsar.Client {
	t.Helper()
	c, err := pulsar.NewClient(pulsar.ClientOptions{URL: "pulsar://" + sa.BrokerAddr()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

// waitLimit only catches hangs.
var waitLimit = func() time.Duration {
	if d, err := time.ParseDuration(os.Getenv("FUNCTIONS_TEST_WAIT")); err == nil {
		return d
	}
	return 3 * time.Minute
}()

// waitFor polls cond until it holds; the deadline only catches hangs.
func waitFor(t testing.TB, what string, cond func() (bool, error)) {
	t.Helper()
	deadline := time.Now().Add(waitLimit)
	var last error
	for time.Now().Before(deadline) {
		ok, err := cond()
		if ok {
			return
		}
		last = err
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("timed out waiting for %s (last error: %v)", what, last)
}

func produce(t *testing.T, c pulsar.Client, topic string, values ...string) {
	t.Helper()
	p, err := c.CreateProducer(pulsar.ProducerOptions{Topic: topic})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	for _, v := range values {
		if _, err := p.Send(context.Background(), &pulsar.ProducerMessage{Payload: []byte(v)}); err != nil {
			t.Fatal(err)
		}
	}
}

// consumeN reads n messages from topic (from the earliest).
func consumeN(t *testing.T, c pulsar.Client, topic string, n int) []string {
	t.Helper()
	cons, err := c.Subscribe(pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "test-" + topic, SubscriptionInitialPosition: pulsar.SubscriptionPositionEarliest})
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	var out []string
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	for len(out) < n {
		m, err := cons.Receive(ctx)
		if err != nil {
			t.Fatalf("after %d of %d messages on %s: %v", len(out), n, topic, err)
		}
		out = append(out, string(m.Payload()))
		_ = cons.Ack(m)
	}
	return out
}

func strp(s string) *string { return &s }

func waitRunning(t testing.TB, admin pa.Client, name string, n int) {
	t.Helper()
	waitFor(t, name+" running", func() (bool, error) {
		st, err := admin.Functions().GetFunctionStatus("public", "default", name)
		if err == nil {
			err = fmt.Errorf("status %+v", st)
		}
		return st.NumRunning == n, err
	})
}

func TestGoExclamation(t *testing.T) {
	admin := adminClient(t)
	client := pulsarClient(t)
	in, out := "persistent://public/default/excl-in", "persistent://public/default/excl-out"
	cfg := &utils.FunctionConfig{
		Tenant: "public", Namespace: "default", Name: "excl", Inputs: []string{in}, Output: out,
		Go: strp(goFunction(t)), Parallelism: 1, SubscriptionPosition: "Earliest",
		UserConfig: map[string]any{"mode": "exclaim"},
	}
	if err := admin.Functions().CreateFunc(cfg, goFunction(t)); err != nil {
		t.Fatal(err)
	}
	waitRunning(t, admin, "excl", 1)
	produce(t, client, in, "a", "b", "c")
	got := consumeN(t, client, out, 3)
	sort.Strings(got)
	if fmt.Sprint(got) != "[a! b! c!]" {
		t.Fatalf("output %v", got)
	}
	got2, err := admin.Functions().GetFunction("public", "default", "excl")
	if err != nil || got2.Output != out || got2.Runtime != "GO" {
		t.Fatalf("get: %+v %v", got2, err)
	}
	if err := admin.Functions().DeleteFunction("public", "default", "excl"); err != nil {
		t.Fatal(err)
	}
}
