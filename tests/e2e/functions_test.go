package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
	pa "github.com/apache/pulsar-client-go/pulsaradmin/pkg/admin"
	paconfig "github.com/apache/pulsar-client-go/pulsaradmin/pkg/admin/config"
	"github.com/apache/pulsar-client-go/pulsaradmin/pkg/utils"

	"github.com/magnetar-io/magnetar/internal/config"
)

// functionsEnv makes a worker notice failures within seconds instead of Pulsar's minute.
func functionsEnv() []string {
	env := map[string]string{
		"rescheduleTimeoutMs": "4000", "failureCheckFreqMs": "250", "instanceLivenessCheckFreqMs": "1000",
		"functionsWorkerSessionTimeoutMs": "2000", "functionsMaxRestartBackoffMs": "2000",
	}
	out := os.Environ()
	for k, v := range env {
		out = append(out, config.EnvName(k)+"="+v)
	}
	return out
}

func freeTCPPort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// startProc runs the magnetar binary with args until its readyMsg log line.
func startProc(t *testing.T, readyMsg string, env []string, args ...string) (*proc, map[string]any) {
	t.Helper()
	p := &proc{t: t, cmd: exec.Command(binary, args...), ready: make(chan map[string]any, 1), exited: make(chan struct{}), readyMsg: readyMsg}
	p.cmd.Env = env
	stderr, err := p.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go p.read(stderr)
	go func() { _ = p.cmd.Wait(); close(p.exited) }()
	t.Cleanup(func() { p.kill() })
	select {
	case rec := <-p.ready:
		return p, rec
	case <-p.exited:
		t.Fatalf("magnetar %s exited before ready:\n%s", args[0], p.log())
	case <-time.After(2 * time.Minute):
		t.Fatalf("magnetar %s not ready:\n%s", args[0], p.log())
	}
	return nil, nil
}

var (
	gofnOnce sync.Once
	gofnPath string
	gofnErr  error
)

func goTestFunction(t *testing.T) string {
	t.Helper()
	gofnOnce.Do(func() {
		dir, err := os.MkdirTemp("", "magnetar-e2e-gofn-")
		if err != nil {
			gofnErr = err
			return
		}
		gofnPath = filepath.Join(dir, "gofn")
		if out, err := exec.Command("go", "build", "-o", gofnPath, "../../internal/functions/testdata/gofn").CombinedOutput(); err != nil {
			gofnErr = fmt.Errorf("%v\n%s", err, out)
		}
	})
	if gofnErr != nil {
		t.Fatal(gofnErr)
	}
	return gofnPath
}

// waitUntil polls cond; the deadline only catches hangs.
func waitUntil(t *testing.T, what string, cond func() (bool, error)) {
	t.Helper()
	deadline := time.Now().Add(3 * time.Minute)
	var last error
	for time.Now().Before(deadline) {
		ok, err := cond()
		if ok {
			return
		}
		last = err
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatalf("timed out waiting for %s (last: %v)", what, last)
}

func workerAssignments(httpAddr string) (map[string][]string, error) {
	resp, err := http.Get("http://" + httpAddr + "/admin/v2/worker/assignments")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var a map[string][]string
	return a, json.NewDecoder(resp.Body).Decode(&a)
}

// TestFunctionsWorkerSIGKILLMovesInstances runs a function with parallelism 3 on two
// workers (the standalone's and a `magnetar functions-worker`), SIGKILLs the second while
// input flows, and checks that its instances move to the first within rescheduleTimeoutMs
// and that every input is processed (ATLEAST_ONCE: nothing lost).
func TestFunctionsWorkerSIGKILLMovesInstances(t *testing.T) {
	dir := t.TempDir()
	mdPort := freeTCPPort(t)
	env := functionsEnv()
	_, broker, httpAddr := func() (*proc, string, string) {
		p, rec := startProc(t, "magnetar standalone ready", env, "standalone", "--log-format", "json", "--data-dir", filepath.Join(dir, "sa"),
			"--metadata-store", "etcd", "--metadata-listen", "http://127.0.0.1:"+strconv.Itoa(mdPort), "--metadata-peer", "http://127.0.0.1:0",
			"--bookie-address", "127.0.0.1:0", "--bind-address", "127.0.0.1", "--port", "0", "--http-port", "0")
		return p, trimScheme(rec["broker"]), trimScheme(rec["http"])
	}()
	wenv := append(env, config.EnvName("pulsarServiceUrl")+"=pulsar://"+broker)
	w2, _ := startProc(t, "magnetar functions worker ready", wenv, "functions-worker", "--log-format", "json",
		"--metadata-url", "etcd://127.0.0.1:"+strconv.Itoa(mdPort), "--port", "0", "--bind-address", "127.0.0.1",
		"--data-dir", filepath.Join(dir, "w2"))

	admin, err := pa.New(&paconfig.Config{WebServiceURL: "http://" + httpAddr})
	if err != nil {
		t.Fatal(err)
	}
	in, out := "persistent://public/default/move-in", "persistent://public/default/move-out"
	fn := goTestFunction(t)
	if err := admin.Functions().CreateFunc(&utils.FunctionConfig{
		Tenant: "public", Namespace: "default", Name: "move", Inputs: []string{in}, Output: out, Go: &fn,
		Parallelism: 3, SubscriptionPosition: "Earliest", UserConfig: map[string]any{"mode": "exclaim"},
	}, fn); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "3 instances on 2 workers", func() (bool, error) {
		a, err := workerAssignments(httpAddr)
		if err != nil {
			return false, err
		}
		st, err := admin.Functions().GetFunctionStatus("public", "default", "move")
		return len(a) == 2 && err == nil && st.NumRunning == 3, fmt.Errorf("assignments %v, status %+v (%v)", a, st, err)
	})

	client, err := pulsar.NewClient(pulsar.ClientOptions{URL: "pulsar://" + broker})
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	prod, err := client.CreateProducer(pulsar.ProducerOptions{Topic: in})
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	const n = 300
	for i := 0; i < n; i++ {
		if i == n/3 {
			w2.kill() // its instances die with it (Pdeathsig)
		}
		if _, err := prod.Send(context.Background(), &pulsar.ProducerMessage{Payload: []byte(strconv.Itoa(i))}); err != nil {
			t.Fatal(err)
		}
		if i < n/3 {
			time.Sleep(5 * time.Millisecond)
		}
	}
	cons, err := client.Subscribe(pulsar.ConsumerOptions{Topic: out, SubscriptionName: "check", SubscriptionInitialPosition: pulsar.SubscriptionPositionEarliest})
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	seen := map[string]bool{}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	for len(seen) < n {
		m, err := cons.Receive(ctx)
		if err != nil {
			t.Fatalf("%d of %d inputs in the output: %v", len(seen), n, err)
		}
		seen[string(m.Payload())] = true
		_ = cons.Ack(m)
	}
	for i := 0; i < n; i++ {
		if !seen[strconv.Itoa(i)+"!"] {
			t.Fatalf("input %d lost", i)
		}
	}
	waitUntil(t, "every instance on the surviving worker", func() (bool, error) {
		a, err := workerAssignments(httpAddr)
		return err == nil && len(a) == 1, fmt.Errorf("assignments %v (%v)", a, err)
	})
}

func trimScheme(v any) string {
	s := fmt.Sprint(v)
	for _, p := range []string{"pulsar://", "http://"} {
		if len(s) > len(p) && s[:len(p)] == p {
			return s[len(p):]
		}
	}
	return s
}

// TestFunctionsEffectivelyOnceBrokerSIGKILL runs an EFFECTIVELY_ONCE function on a worker
// of its own while the broker (a standalone, with its metadata store and bookie) is
// SIGKILLed and restarted in a loop: every input appears in the output exactly once.
func TestFunctionsEffectivelyOnceBrokerSIGKILL(t *testing.T) {
	dir := t.TempDir()
	mdPort, brokerPort, httpPort := freeTCPPort(t), freeTCPPort(t), freeTCPPort(t)
	env := append(functionsEnv(), config.EnvName("brokerDeduplicationEnabled")+"=true")
	startBroker := func() *proc {
		p, _ := startProc(t, "magnetar standalone ready", env, "standalone", "--log-format", "json", "--data-dir", filepath.Join(dir, "sa"),
			"--metadata-store", "etcd", "--metadata-listen", "http://127.0.0.1:"+strconv.Itoa(mdPort), "--metadata-peer", "http://127.0.0.1:0",
			"--bookie-address", "127.0.0.1:0", "--bind-address", "127.0.0.1", "--port", strconv.Itoa(brokerPort),
			"--http-port", strconv.Itoa(httpPort), "--functions-worker=false")
		return p
	}
	sa := startBroker()
	broker := "127.0.0.1:" + strconv.Itoa(brokerPort)
	wenv := append(env, config.EnvName("pulsarServiceUrl")+"=pulsar://"+broker)
	_, rec := startProc(t, "magnetar functions worker ready", wenv, "functions-worker", "--log-format", "json",
		"--metadata-url", "etcd://127.0.0.1:"+strconv.Itoa(mdPort), "--port", "0", "--bind-address", "127.0.0.1",
		"--data-dir", filepath.Join(dir, "w"))
	workerHTTP := trimScheme(rec["http"])

	admin, err := pa.New(&paconfig.Config{WebServiceURL: "http://" + workerHTTP})
	if err != nil {
		t.Fatal(err)
	}
	in, out := "persistent://public/default/eo-in", "persistent://public/default/eo-out"
	const n = 1500
	client, err := pulsar.NewClient(pulsar.ClientOptions{URL: "pulsar://" + broker, OperationTimeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	prod, err := client.CreateProducer(pulsar.ProducerOptions{Topic: in, BatchingMaxMessages: 50})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var sendErr error
	var mu sync.Mutex
	for i := 0; i < n; i++ {
		wg.Add(1)
		prod.SendAsync(context.Background(), &pulsar.ProducerMessage{Payload: []byte(strconv.Itoa(i))}, func(_ pulsar.MessageID, _ *pulsar.ProducerMessage, err error) {
			if err != nil {
				mu.Lock()
				sendErr = err
				mu.Unlock()
			}
			wg.Done()
		})
	}
	wg.Wait()
	prod.Close()
	if sendErr != nil {
		t.Fatal(sendErr)
	}
	fn := goTestFunction(t)
	if err := admin.Functions().CreateFunc(&utils.FunctionConfig{
		Tenant: "public", Namespace: "default", Name: "eo", Inputs: []string{in}, Output: out, Go: &fn,
		Parallelism: 1, SubscriptionPosition: "Earliest", ProcessingGuarantees: "EFFECTIVELY_ONCE",
		UserConfig: map[string]any{"mode": "exclaim", "sleepMs": 4},
	}, fn); err != nil {
		t.Fatal(err)
	}
	// Kill the broker three times while the function works through the input (sleepMs
	// makes it take n x 4 ms at least).
	for round := 0; round < 3; round++ {
		time.Sleep(2 * time.Second)
		if round == 0 {
			st, err := admin.Functions().GetFunctionStats("public", "default", "eo")
			if err == nil && st.ProcessedSuccessfullyTotal >= n {
				t.Fatalf("the function finished before the first broker kill: the test would prove nothing")
			}
		}
		sa.kill()
		sa = startBroker()
	}
	reader, err := client.CreateReader(pulsar.ReaderOptions{Topic: out, StartMessageID: pulsar.EarliestMessageID()})
	if err != nil {
		t.Fatal(err)
	}
	defer reader.Close()
	counts := map[string]int{}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	for len(counts) < n {
		m, err := reader.Next(ctx)
		if err != nil {
			t.Fatalf("%d of %d inputs in the output: %v", len(counts), n, err)
		}
		counts[string(m.Payload())]++
	}
	// Whatever a duplicate would be, it would have been written by now: read to the end.
	for reader.HasNext() {
		m, err := reader.Next(ctx)
		if err != nil {
			t.Fatal(err)
		}
		counts[string(m.Payload())]++
	}
	for i := 0; i < n; i++ {
		if c := counts[strconv.Itoa(i)+"!"]; c != 1 {
			t.Fatalf("input %d appears %d times in the output", i, c)
		}
	}
	if len(counts) != n {
		t.Fatalf("%d distinct outputs, want %d", len(counts), n)
	}
}
