package standalone_test

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"

	pa "github.com/apache/pulsar-client-go/pulsaradmin/pkg/admin"
	paconfig "github.com/apache/pulsar-client-go/pulsaradmin/pkg/admin/config"
	"github.com/apache/pulsar-client-go/pulsaradmin/pkg/rest"
	"github.com/apache/pulsar-client-go/pulsaradmin/pkg/utils"
)

// TestPackagesPermission: with authentication and authorization on, pulsaradmin's
// Packages() client works for a role granted the namespace's packages permission and for
// the tenant's admin, and a role with only produce gets Pulsar's 401 for every verb; a
// function created from a function:// URL needs the packages permission as well.
func TestPackagesPermission(t *testing.T) {
	f := startSecure(t, func(c *config_) {
		c.Broker.Security.Authz.SuperUserRoles = []string{"root", "admin"}
		c.Broker.Packages.Enabled = true
	})
	root := "Bearer " + f.token(t, "root", 0)
	for _, c := range []struct{ method, path, body string }{
		{"PUT", "/admin/v2/tenants/acme", `{"adminRoles":["acme-admin"],"allowedClusters":["standalone"]}`},
		{"PUT", "/admin/v2/namespaces/acme/app", ``},
		{"POST", "/admin/v2/namespaces/acme/app/permissions/packager", `["packages"]`},
		{"POST", "/admin/v2/namespaces/acme/app/permissions/producer", `["produce"]`},
		{"POST", "/admin/v2/namespaces/acme/app/permissions/fnonly", `["functions"]`},
		{"POST", "/admin/v2/namespaces/acme/app/permissions/fnpkg", `["functions","packages"]`},
	} {
		if code, body := f.rest(t, root, c.method, c.path, c.body); code >= 300 {
			t.Fatalf("%s %s: %d %s", c.method, c.path, code, body)
		}
	}
	client := func(role string) pa.Packages {
		c, err := pa.New(&paconfig.Config{WebServiceURL: f.httpURL, Token: f.token(t, role, 0), PulsarAPIVersion: paconfig.V3})
		if err != nil {
			t.Fatal(err)
		}
		return c.Packages()
	}
	file := filepath.Join(t.TempDir(), "fn.py")
	if err := os.WriteFile(file, []byte("print('hi')\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	const url = "function://acme/app/fn@1"
	if err := client("packager").Upload(url, file, "by the packager", "", nil); err != nil {
		t.Fatal(err)
	}
	admin := client("acme-admin")
	if vs, err := admin.ListVersions("function://acme/app/fn"); err != nil || !slices.Equal(vs, []string{"1"}) {
		t.Fatalf("tenant admin's versions %v, %v", vs, err)
	}
	p := client("producer")
	_, listErr := p.List("function", "acme/app")
	_, mdErr := p.GetMetadata(url)
	for what, err := range map[string]error{
		"upload":   p.Upload("function://acme/app/other@1", file, "", "", nil),
		"list":     listErr,
		"metadata": mdErr,
		"download": p.Download(url, filepath.Join(t.TempDir(), "x")),
		"delete":   p.Delete(url),
	} {
		var re rest.Error
		if !errors.As(err, &re) || re.Code != 401 || re.Reason != "Role producer has not the 'package' permission to do the packages operations." {
			t.Errorf("%s as producer: %v, want Pulsar's 401", what, err)
		}
	}
	if md, err := admin.GetMetadata(url); err != nil || md.Description != "by the packager" {
		t.Fatalf("after the denials: %+v, %v", md, err)
	}
	// A function:// package URL needs the packages permission too: without it 403 before the
	// package is read; with it the package is read (and refused: it is no Linux executable).
	fnCfg := &utils.FunctionConfig{Tenant: "acme", Namespace: "app", Name: "f", Inputs: []string{"persistent://acme/app/in"}, Runtime: "GO", Parallelism: 1}
	for role, want := range map[string]int{"fnonly": 403, "fnpkg": 400} {
		c, err := pa.New(&paconfig.Config{WebServiceURL: f.httpURL, Token: f.token(t, role, 0)})
		if err != nil {
			t.Fatal(err)
		}
		var re rest.Error
		if err := c.Functions().CreateFuncWithURL(fnCfg, url); !errors.As(err, &re) || re.Code != want {
			t.Errorf("function from %s as %s: %v, want %d", url, role, err, want)
		}
	}
	if err := client("packager").Delete(url); err != nil {
		t.Fatal(err)
	}
}
