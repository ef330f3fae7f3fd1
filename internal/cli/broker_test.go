package cli

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

func TestBrokerRoleBadConfigExit2(t *testing.T) {
	for _, c := range []struct {
		args []string
		key  string
	}{
		{[]string{"broker", "--metadata-store-url", "zk://h:2181"}, "metadataStoreUrl"},
		{[]string{"broker", "--metadata-url", "h:2379"}, "metadataStoreUrl"},
		{[]string{"broker", "--default-number-of-namespace-bundles", "0"}, "defaultNumberOfNamespaceBundles"},
		{[]string{"broker", "--metadata-store-session-timeout-millis", "10"}, "metadataStoreSessionTimeoutMillis"},
		{[]string{"dev-cluster", "--bookies", "1"}, "2 bookies"},
	} {
		code, _, errOut := run(t, nil, c.args...)
		if code != 2 || !strings.Contains(errOut, c.key) {
			t.Errorf("%v: exit %d, %q (want 2 naming %s)", c.args, code, errOut, c.key)
		}
	}
}

func TestAdminClusterVerbs(t *testing.T) {
	var mu sync.Mutex
	var seen []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.Method+" "+r.URL.Path)
		mu.Unlock()
		if r.Method == http.MethodPut {
			w.WriteHeader(http.StatusNoContent)
			return
		}
		_, _ = w.Write([]byte(`{"numBundles":4}`))
	}))
	defer srv.Close()
	for _, args := range [][]string{
		{"namespaces", "bundles", "public/default"},
		{"namespaces", "unload-bundle", "public/default", "0x00000000_0x40000000"},
		{"namespaces", "split-bundle", "public/default", "0x00000000_0x40000000"},
		{"brokers", "bundle-owners"},
		{"brokers", "load-reports"},
	} {
		if code, _, errOut := run(t, nil, append([]string{"admin", "--admin-url", srv.URL}, args...)...); code != 0 {
			t.Errorf("%v: exit %d %s", args, code, errOut)
		}
	}
	want := []string{"GET /admin/v2/namespaces/public/default/bundles", "PUT /admin/v2/namespaces/public/default/0x00000000_0x40000000/unload",
		"PUT /admin/v2/namespaces/public/default/0x00000000_0x40000000/split",
		"GET /admin/v2/bundle-owners", "GET /admin/v2/broker-load-reports"}
	if strings.Join(seen, "|") != strings.Join(want, "|") {
		t.Errorf("requests %v, want %v", seen, want)
	}
}
