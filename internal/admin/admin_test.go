package admin_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/magnetar-io/magnetar/internal/admin"
	"github.com/magnetar-io/magnetar/internal/metadata/memstore"
	"github.com/magnetar-io/magnetar/internal/resources"
)

func newServer(t *testing.T) *httptest.Server {
	t.Helper()
	res := resources.New(memstore.New(memstore.DefaultOptions()))
	ctx := context.Background()
	if err := res.CreateCluster(ctx, "standalone", resources.ClusterData{}); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(admin.Handler(admin.Config{Resources: res}))
	t.Cleanup(srv.Close)
	return srv
}

func do(t *testing.T, srv *httptest.Server, method, path, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, srv.URL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, strings.TrimSpace(string(b))
}

func TestClustersTenantsNamespaces(t *testing.T) {
	srv := newServer(t)
	if code, body := do(t, srv, "GET", "/admin/v2/clusters", ""); code != 200 || body != `["standalone"]` {
		t.Fatalf("clusters: %d %s", code, body)
	}
	if code, body := do(t, srv, "GET", "//admin/v2//clusters/", ""); code != 200 || body != `["standalone"]` {
		t.Fatalf("uncleaned path: %d %s", code, body)
	}
	if code, body := do(t, srv, "GET", "/admin/v2/clusters/nope", ""); code != 404 || !strings.Contains(body, `"reason"`) {
		t.Fatalf("missing cluster: %d %s", code, body)
	}
	if code, _ := do(t, srv, "PUT", "/admin/v2/tenants/acme", `{"adminRoles":["a"],"allowedClusters":["standalone"],"unknownField":1}`); code != 204 {
		t.Fatalf("create tenant: %d", code)
	}
	if code, _ := do(t, srv, "PUT", "/admin/v2/tenants/acme", `{}`); code != 409 {
		t.Fatalf("duplicate tenant: %d", code)
	}
	if code, _ := do(t, srv, "PUT", "/admin/v2/tenants/bad", `{"adminRoles":`); code != 400 {
		t.Fatalf("invalid JSON: %d", code)
	}
	if code, _ := do(t, srv, "PUT", "/admin/v2/tenants/nulled", `null`); code != 204 {
		t.Fatalf("null body: %d", code)
	}
	code, body := do(t, srv, "GET", "/admin/v2/tenants/acme", "")
	var ti resources.TenantInfo
	if code != 200 || json.Unmarshal([]byte(body), &ti) != nil || ti.AdminRoles[0] != "a" {
		t.Fatalf("get tenant: %d %s", code, body)
	}
	if code, _ := do(t, srv, "PUT", "/admin/v2/namespaces/acme/ns1", ""); code != 204 {
		t.Fatalf("create namespace: %d", code)
	}
	if code, body := do(t, srv, "GET", "/admin/v2/namespaces/acme", ""); code != 200 || body != `["acme/ns1"]` {
		t.Fatalf("list namespaces: %d %s", code, body)
	}
	if code, _ := do(t, srv, "GET", "/admin/v2/namespaces/nobody", ""); code != 404 {
		t.Fatalf("namespaces of missing tenant: %d", code)
	}
	if code, _ := do(t, srv, "DELETE", "/admin/v2/tenants/acme", ""); code != 409 {
		t.Fatalf("delete non-empty tenant: %d", code)
	}
	if code, _ := do(t, srv, "DELETE", "/admin/v2/namespaces/acme/ns1", ""); code != 204 {
		t.Fatalf("delete namespace: %d", code)
	}
	if code, _ := do(t, srv, "DELETE", "/admin/v2/tenants/acme", ""); code != 204 {
		t.Fatalf("delete tenant: %d", code)
	}
}

func TestStatusAndMetrics(t *testing.T) {
	srv := newServer(t)
	if code, body := do(t, srv, "GET", "/status.html", ""); code != 200 || body != "OK" {
		t.Fatalf("status: %d %s", code, body)
	}
	if code, body := do(t, srv, "GET", "/metrics", ""); code != 200 || !strings.Contains(body, "go_goroutines") {
		t.Fatalf("metrics: %d", code)
	}
}

func TestPprofOnlyWhenEnabled(t *testing.T) {
	srv := newServer(t)
	if code, _ := do(t, srv, "GET", "/debug/pprof/", ""); code != 404 {
		t.Fatalf("pprof served while disabled: %d", code)
	}
	res := resources.New(memstore.New(memstore.DefaultOptions()))
	on := httptest.NewServer(admin.Handler(admin.Config{Resources: res, Pprof: true}))
	defer on.Close()
	if code, body := do(t, on, "GET", "/debug/pprof/", ""); code != 200 || !strings.Contains(body, "goroutine") {
		t.Fatalf("pprof index: %d", code)
	}
}
