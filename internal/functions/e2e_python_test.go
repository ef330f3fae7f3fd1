package functions_test

import (
	"fmt"
	"path/filepath"
	"sort"
	"testing"

	"github.com/apache/pulsar-client-go/pulsaradmin/pkg/utils"
)

// TestPythonFunctions runs the exclamation and word-count functions written against the
// pulsar-client wheel's pulsar.Function API. The worker builds the function's virtualenv
// (python3 -m venv, pip install pulsar-client grpcio protobuf) on first start: pip must
// reach PyPI or a configured index, and a machine without it fails here, not skips.
func TestPythonFunctions(t *testing.T) {
	admin := adminClient(t)
	client := pulsarClient(t)
	py, err := filepath.Abs("testdata/pyfn/exclamation.py")
	if err != nil {
		t.Fatal(err)
	}
	in, out := "persistent://public/default/py-excl-in", "persistent://public/default/py-excl-out"
	cfg := &utils.FunctionConfig{
		Tenant: "public", Namespace: "default", Name: "py-excl", Inputs: []string{in}, Output: out,
		Py: strp(py), ClassName: "exclamation.Exclamation", Parallelism: 1, SubscriptionPosition: "Earliest",
	}
	if err := admin.Functions().CreateFunc(cfg, py); err != nil {
		t.Fatal(err)
	}
	waitRunning(t, admin, "py-excl", 1)
	produce(t, client, in, "a", "b")
	got := consumeN(t, client, out, 2)
	sort.Strings(got)
	if fmt.Sprint(got) != "[a! b!]" {
		t.Fatalf("output %v", got)
	}

	win, wout := "persistent://public/default/py-wc-in", "persistent://public/default/py-wc-out"
	wc := &utils.FunctionConfig{
		Tenant: "public", Namespace: "default", Name: "py-wc", Inputs: []string{win}, Output: wout,
		Py: strp(py), ClassName: "exclamation.Exclamation", Parallelism: 1, SubscriptionPosition: "Earliest",
		RetainOrdering: true, UserConfig: map[string]any{"mode": "wordcount"},
	}
	if err := admin.Functions().CreateFunc(wc, py); err != nil {
		t.Fatal(err)
	}
	waitRunning(t, admin, "py-wc", 1)
	produce(t, client, win, "to be or", "not to be")
	got = consumeN(t, client, wout, 2)
	if fmt.Sprint(got) != "[to=1 be=1 or=1 not=1 to=2 be=2]" {
		t.Fatalf("word counts %v", got)
	}
	for _, name := range []string{"py-excl", "py-wc"} {
		if err := admin.Functions().DeleteFunction("public", "default", name); err != nil {
			t.Fatal(err)
		}
	}
}
