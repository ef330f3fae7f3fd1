package functions_test

import (
	"errors"
	"fmt"
	"sort"
	"strings"
	"testing"

	pa "github.com/apache/pulsar-client-go/pulsaradmin/pkg/admin"
	paconfig "github.com/apache/pulsar-client-go/pulsaradmin/pkg/admin/config"
	"github.com/apache/pulsar-client-go/pulsaradmin/pkg/rest"
	"github.com/apache/pulsar-client-go/pulsaradmin/pkg/utils"
)

// TestFunctionFromPackageURL: a function created with a function:// package URL (Pulsar's
// packages management) runs the package uploaded through the packages API, keeps running
// after the package is deleted (it has its own copy), and a missing package is a 400.
func TestFunctionFromPackageURL(t *testing.T) {
	admin := adminClient(t)
	v3, err := pa.New(&paconfig.Config{WebServiceURL: "http://" + sa.HTTPAddr(), PulsarAPIVersion: paconfig.V3})
	if err != nil {
		t.Fatal(err)
	}
	const pkg = "function://public/default/exclaim@1"
	if err := v3.Packages().Upload(pkg, goFunction(t), "the exclamation function", "", nil); err != nil {
		t.Fatal(err)
	}
	client := pulsarClient(t)
	in, out := "persistent://public/default/pkgfn-in", "persistent://public/default/pkgfn-out"
	cfg := &utils.FunctionConfig{
		Tenant: "public", Namespace: "default", Name: "pkgfn", Inputs: []string{in}, Output: out,
		Runtime: "GO", Parallelism: 1, SubscriptionPosition: "Earliest", UserConfig: map[string]any{"mode": "exclaim"},
	}
	if err := admin.Functions().CreateFuncWithURL(cfg, pkg); err != nil {
		t.Fatal(err)
	}
	if err := v3.Packages().Delete(pkg); err != nil {
		t.Fatal(err)
	}
	waitRunning(t, admin, "pkgfn", 1)
	produce(t, client, in, "a", "b")
	got := consumeN(t, client, out, 2)
	sort.Strings(got)
	if fmt.Sprint(got) != "[a! b!]" {
		t.Fatalf("output %v", got)
	}
	if err := admin.Functions().DeleteFunction("public", "default", "pkgfn"); err != nil {
		t.Fatal(err)
	}

	cfg.Name = "pkgfn-missing"
	err = admin.Functions().CreateFuncWithURL(cfg, pkg)
	var re rest.Error
	if !errors.As(err, &re) || re.Code != 400 || !strings.Contains(re.Reason, "does not exist") {
		t.Fatalf("a deleted package: %v, want 400", err)
	}
}
