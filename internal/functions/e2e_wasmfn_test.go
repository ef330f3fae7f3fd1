package functions_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"sync"
	"testing"

	"github.com/apache/pulsar-client-go/pulsar"
	"github.com/apache/pulsar-client-go/pulsaradmin/pkg/utils"
)

var (
	wasmOnce sync.Once
	wasmPath string
	wasmErr  error
)

// wasmFunction builds testdata/wasmfn for wasip1 once.
func wasmFunction(t testing.TB) string {
	t.Helper()
	wasmOnce.Do(func() {
		wasmPath = filepath.Join(testDir, "fn.wasm")
		cmd := exec.Command("go", "build", "-buildmode=c-shared", "-o", wasmPath, "./testdata/wasmfn")
		cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm")
		if out, err := cmd.CombinedOutput(); err != nil {
			wasmErr = fmt.Errorf("building the wasm test function: %v\n%s", err, out)
		}
	})
	if wasmErr != nil {
		t.Fatal(wasmErr)
	}
	return wasmPath
}

// TestWasmFunctions runs the exclamation and word-count functions as WASM in the worker
// process, and checks that a call that spins forever and one that allocates without bound
// fail only their record: the instance keeps going.
func TestWasmFunctions(t *testing.T) {
	admin := adminClient(t)
	client := pulsarClient(t)
	mod := wasmFunction(t)

	in, out := "persistent://public/default/wasm-excl-in", "persistent://public/default/wasm-excl-out"
	maxRetries := 1
	cfg := &utils.FunctionConfig{
		Tenant: "public", Namespace: "default", Name: "wasm-excl", Inputs: []string{in}, Output: out,
		Runtime: "WASM", Parallelism: 1, SubscriptionPosition: "Earliest", MaxMessageRetries: &maxRetries,
		UserConfig: map[string]any{"mode": "exclaim"},
	}
	if err := admin.Functions().CreateFunc(cfg, mod); err != nil {
		t.Fatal(err)
	}
	waitRunning(t, admin, "wasm-excl", 1)
	produce(t, client, in, "a", "spin", "grow", "b")
	got := consumeN(t, client, out, 2)
	sort.Strings(got)
	if fmt.Sprint(got) != "[a! b!]" {
		t.Fatalf("output %v", got)
	}
	waitFor(t, "the bad records counted as user exceptions", func() (bool, error) {
		st, err := admin.Functions().GetFunctionStatus("public", "default", "wasm-excl")
		if err != nil || len(st.Instances) != 1 {
			return false, err
		}
		s := st.Instances[0].Status
		return s.Running && s.NumUserExceptions >= 2, fmt.Errorf("status %+v", s)
	})

	win, wout := "persistent://public/default/wasm-wc-in", "persistent://public/default/wasm-wc-out"
	wc := &utils.FunctionConfig{
		Tenant: "public", Namespace: "default", Name: "wasm-wc", Inputs: []string{win}, Output: wout,
		Runtime: "WASM", Parallelism: 1, SubscriptionPosition: "Earliest", RetainOrdering: true,
		UserConfig: map[string]any{"mode": "wordcount"},
	}
	if err := admin.Functions().CreateFunc(wc, mod); err != nil {
		t.Fatal(err)
	}
	waitRunning(t, admin, "wasm-wc", 1)
	produce(t, client, win, "to be or", "not to be")
	got = consumeN(t, client, wout, 2)
	if fmt.Sprint(got) != "[to=1 be=1 or=1 not=1 to=2 be=2]" {
		t.Fatalf("word counts %v", got)
	}
	st, err := admin.Functions().GetFunctionState("public", "default", "wasm-wc", "be")
	if err != nil || st.NumValue != 2 {
		t.Fatalf("querystate be: %+v %v", st, err)
	}
	for _, name := range []string{"wasm-excl", "wasm-wc"} {
		if err := admin.Functions().DeleteFunction("public", "default", name); err != nil {
			t.Fatal(err)
		}
	}
}

// TestWasmFunctionHostAPI drives every host import of the ABI the other WASM tests do not
// (state get/put/delete, counters, the current record's topic, key and id, publish, log)
// through the Go guest SDK, each answer reported in the function's output.
func TestWasmFunctionHostAPI(t *testing.T) {
	admin := adminClient(t)
	client := pulsarClient(t)
	in, out, side := "persistent://public/default/wasm-api-in", "persistent://public/default/wasm-api-out", "persistent://public/default/wasm-api-side"
	cfg := &utils.FunctionConfig{
		Tenant: "public", Namespace: "default", Name: "wasm-api", Inputs: []string{in}, Output: out,
		Runtime: "WASM", Parallelism: 1, SubscriptionPosition: "Earliest", RetainOrdering: true,
		UserConfig: map[string]any{"mode": "api", "publishTo": side},
	}
	if err := admin.Functions().CreateFunc(cfg, wasmFunction(t)); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = admin.Functions().DeleteFunction("public", "default", "wasm-api") }()
	waitRunning(t, admin, "wasm-api", 1)
	p, err := client.CreateProducer(pulsar.ProducerOptions{Topic: in})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	for _, v := range []string{"x", "y"} {
		if _, err := p.Send(context.Background(), &pulsar.ProducerMessage{Payload: []byte(v), Key: "k-" + v}); err != nil {
			t.Fatal(err)
		}
	}
	got := consumeN(t, client, out, 2)
	want := []string{
		"x got=v-x del=<nil> after=true again=true n=3 key=k-x topic=true id=true",
		"y got=v-y del=<nil> after=true again=true n=6 key=k-y topic=true id=true",
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("output\n%q\nwant\n%q", got, want)
	}
	sides := consumeN(t, client, side, 2)
	sort.Strings(sides)
	if fmt.Sprint(sides) != "[side-x side-y]" {
		t.Fatalf("published %v", sides)
	}
	st, err := admin.Functions().GetFunctionState("public", "default", "wasm-api", "n")
	if err != nil || st.NumValue != 6 {
		t.Fatalf("querystate n: %+v %v", st, err)
	}
}
