package functions_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
	"github.com/apache/pulsar-client-go/pulsaradmin/pkg/utils"
)

// benchMessages is how many messages each throughput run moves (FUNCTIONS_BENCH_MESSAGES).
func benchMessages() int {
	if n, err := strconv.Atoi(os.Getenv("FUNCTIONS_BENCH_MESSAGES")); err == nil && n > 0 {
		return n
	}
	return 20000
}

// BenchmarkFunctionsIdentity moves the same messages through an identity function per
// runtime and through a plain client doing consume -> produce, in one run, and reports
// messages per second and each runtime's share of the plain client's rate (targets:
// process >= 70 %, wasm >= 80 %). Run it with `make bench-functions`.
func BenchmarkFunctionsIdentity(b *testing.B) {
	n := benchMessages()
	admin := adminClient(b)
	client := pulsarClient(b)
	var plain float64
	rates := map[string]float64{}
	run := func(name string, start func(in, out string) func()) {
		in, out := "persistent://public/default/bench-"+name+"-in", "persistent://public/default/bench-"+name+"-out"
		stop := start(in, out)
		defer stop()
		rate := moveMessages(b, client, in, out, n)
		if strings.HasPrefix(name, "plain") {
			// The baseline runs first and last; the better run counts, so warm-up does not
			// flatter the functions.
			plain = max(plain, rate)
			return
		}
		b.ReportMetric(rate, name+"-msgs/s")
		rates[name] = rate
	}
	run("plain", func(in, out string) func() { return plainPipeline(b, client, in, out) })
	fn := func(name, runtimeName string, pkg string, py *string) func(in, out string) func() {
		return func(in, out string) func() {
			cfg := &utils.FunctionConfig{Tenant: "public", Namespace: "default", Name: "bench-" + name, Inputs: []string{in}, Output: out,
				Runtime: runtimeName, Py: py, Parallelism: 1, UserConfig: map[string]any{"mode": "identity"}}
			if py != nil {
				cfg.ClassName = "identity.Identity"
			}
			if err := admin.Functions().CreateFunc(cfg, pkg); err != nil {
				b.Fatal(err)
			}
			waitRunning(b, admin, "bench-"+name, 1)
			return func() { _ = admin.Functions().DeleteFunction("public", "default", "bench-"+name) }
		}
	}
	run("process", fn("process", "GO", goFunction(b), nil))
	run("wasm", fn("wasm", "WASM", wasmFunction(b), nil))
	if os.Getenv("FUNCTIONS_BENCH_PYTHON") != "" {
		py := pythonIdentity(b)
		run("python", fn("python", "PYTHON", py, &py))
	}
	run("plain2", func(in, out string) func() { return plainPipeline(b, client, in, out) })
	b.ReportMetric(plain, "plain-msgs/s")
	for _, name := range []string{"process", "wasm", "python"} {
		if r, ok := rates[name]; ok {
			b.ReportMetric(100*r/plain, name+"-%-of-plain")
		}
	}
}

// BenchmarkFunctionsIdleMemory reports what an idle instance costs: a Go process instance's
// RSS, and a WASM instance's growth of the worker's Go heap (its linear memory and runtime
// live there).
func BenchmarkFunctionsIdleMemory(b *testing.B) { idleMemory(b) }

func pythonIdentity(b *testing.B) string {
	p := filepath.Join(b.TempDir(), "identity.py")
	if err := os.WriteFile(p, []byte("from pulsar import Function\n\nclass Identity(Function):\n    def process(self, input, context):\n        return input\n"), 0o644); err != nil {
		b.Fatal(err)
	}
	return p
}

// plainPipeline is the baseline: one consumer, one producer, acknowledging after the
// receipt (what ATLEAST_ONCE does), reading through a message channel as instances do.
func plainPipeline(b *testing.B, c pulsar.Client, in, out string) func() {
	ch := make(chan pulsar.ConsumerMessage, 1000)
	cons, err := c.Subscribe(pulsar.ConsumerOptions{Topic: in, SubscriptionName: "plain", Type: pulsar.Shared, MessageChannel: ch})
	if err != nil {
		b.Fatal(err)
	}
	prod, err := c.CreateProducer(pulsar.ProducerOptions{Topic: out})
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			var m pulsar.Message
			select {
			case <-ctx.Done():
				return
			case cm := <-ch:
				m = cm.Message
			}
			prod.SendAsync(ctx, &pulsar.ProducerMessage{Payload: m.Payload(), Key: m.Key()}, func(_ pulsar.MessageID, _ *pulsar.ProducerMessage, err error) {
				if err == nil {
					_ = cons.Ack(m)
				}
			})
		}
	}()
	return func() { cancel(); <-done; prod.Close(); cons.Close() }
}

// moveMessages sends n messages to in and returns messages per second until all n are on out.
func moveMessages(b *testing.B, c pulsar.Client, in, out string, n int) float64 {
	cons, err := c.Subscribe(pulsar.ConsumerOptions{Topic: out, SubscriptionName: "bench-count", ReceiverQueueSize: 5000})
	if err != nil {
		b.Fatal(err)
	}
	defer cons.Close()
	prod, err := c.CreateProducer(pulsar.ProducerOptions{Topic: in})
	if err != nil {
		b.Fatal(err)
	}
	defer prod.Close()
	payload := []byte(strings.Repeat("x", 100))
	var got atomic.Int64
	allIn := make(chan struct{})
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
		defer cancel()
		for got.Load() < int64(n) {
			m, err := cons.Receive(ctx)
			if err != nil {
				break
			}
			cons.AckID(m.ID())
			got.Add(1)
		}
		close(allIn)
	}()
	began := time.Now()
	for i := 0; i < n; i++ {
		prod.SendAsync(context.Background(), &pulsar.ProducerMessage{Payload: payload}, func(pulsar.MessageID, *pulsar.ProducerMessage, error) {})
	}
	prod.Flush()
	<-allIn
	if got.Load() < int64(n) {
		b.Fatalf("only %d of %d messages came through", got.Load(), n)
	}
	return float64(n) / time.Since(began).Seconds()
}

// idleMemory reports the resident memory of idle instances: per Go process (their RSS),
// per WASM instance (the worker process's RSS growth).
func idleMemory(b *testing.B) {
	admin := adminClient(b)
	const k = 4
	in := "persistent://public/default/bench-idle-in"
	gofn := goFunction(b)
	if err := admin.Functions().CreateFunc(&utils.FunctionConfig{Tenant: "public", Namespace: "default", Name: "idle-go",
		Inputs: []string{in}, Runtime: "GO", Parallelism: k}, gofn); err != nil {
		b.Fatal(err)
	}
	waitRunning(b, admin, "idle-go", k)
	time.Sleep(2 * time.Second)
	b.ReportMetric(float64(processRSS(gofn))/k/(1<<20), "go-process-MiB/instance")
	_ = admin.Functions().DeleteFunction("public", "default", "idle-go")

	heap := func() uint64 {
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		return ms.HeapInuse
	}
	before := heap()
	if err := admin.Functions().CreateFunc(&utils.FunctionConfig{Tenant: "public", Namespace: "default", Name: "idle-wasm",
		Inputs: []string{in}, Runtime: "WASM", Parallelism: k}, wasmFunction(b)); err != nil {
		b.Fatal(err)
	}
	waitRunning(b, admin, "idle-wasm", k)
	time.Sleep(2 * time.Second)
	b.ReportMetric((float64(heap())-float64(before))/k/(1<<20), "wasm-heap-MiB/instance")
	_ = admin.Functions().DeleteFunction("public", "default", "idle-wasm")
}

func rssOf(pid string) int64 {
	raw, err := os.ReadFile("/proc/" + pid + "/statm")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(raw))
	if len(f) < 2 {
		return 0
	}
	pages, _ := strconv.ParseInt(f[1], 10, 64)
	return pages * int64(os.Getpagesize())
}

// processRSS sums the RSS of the processes running binary.
func processRSS(binary string) int64 {
	ents, _ := os.ReadDir("/proc")
	var sum int64
	for _, e := range ents {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		exe, err := os.Readlink(filepath.Join("/proc", e.Name(), "exe"))
		// The worker runs its cached copy of the package, under the test's directory.
		if err == nil && filepath.Base(exe) == filepath.Base(binary) && strings.HasPrefix(exe, testDir) {
			sum += rssOf(e.Name())
		}
	}
	return sum
}

var _ = fmt.Sprint
