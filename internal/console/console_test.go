package console

import (
	"bytes"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

func get(t *testing.T, h http.Handler, method, path string) *httptest.ResponseRecorder {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(method, path, nil))
	return rec
}

func TestServesThePageAndPassesTheRestOn(t *testing.T) {
	next := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, "admin:"+r.URL.Path) })
	h := Mount(next, Options{ReadOnly: true})

	if rec := get(t, h, "GET", "/admin/v2/clusters"); rec.Body.String() != "admin:/admin/v2/clusters" {
		t.Fatalf("admin path: %q", rec.Body.String())
	}
	if rec := get(t, h, "GET", "/uix"); rec.Body.String() != "admin:/uix" {
		t.Fatalf("/uix is not the console: %q", rec.Body.String())
	}
	if rec := get(t, h, "GET", "/ui"); rec.Code != http.StatusMovedPermanently || rec.Header().Get("Location") != "/ui/" {
		t.Fatalf("/ui: %d %q", rec.Code, rec.Header().Get("Location"))
	}
	page := get(t, h, "GET", "/ui/")
	if page.Code != 200 || !strings.Contains(page.Body.String(), "<title>Magnetar console</title>") {
		t.Fatalf("/ui/: %d %q", page.Code, page.Body.String())
	}
	// Deep links get the same page.
	if rec := get(t, h, "GET", "/ui/topic/persistent/public/default/x"); rec.Body.String() != page.Body.String() {
		t.Fatal("a deep link does not serve the page")
	}
	script := regexp.MustCompile(`src="(assets/app\.[0-9a-f]+\.js)"`).FindStringSubmatch(page.Body.String())
	if script == nil {
		t.Fatalf("no hashed script in the page: %s", page.Body.String())
	}
	js := get(t, h, "GET", "/ui/"+script[1])
	if js.Code != 200 || !strings.Contains(js.Header().Get("Content-Type"), "javascript") || !strings.Contains(js.Header().Get("Cache-Control"), "immutable") {
		t.Fatalf("script: %d %v", js.Code, js.Header())
	}
	if rec := get(t, h, "GET", "/ui/assets/../../etc/passwd"); rec.Code == 200 && !strings.Contains(rec.Body.String(), "Magnetar") {
		t.Fatalf("path escape served %q", rec.Body.String())
	}
	if rec := get(t, h, "GET", "/ui/assets/nope.js"); rec.Code != http.StatusNotFound {
		t.Fatalf("missing asset: %d", rec.Code)
	}
	if rec := get(t, h, "GET", "/ui/config.json"); rec.Body.String() != `{"readOnly":true}` {
		t.Fatalf("config.json: %s", rec.Body.String())
	}
	if rec := get(t, h, "POST", "/ui/"); rec.Code != http.StatusMethodNotAllowed {
		t.Fatalf("POST /ui/: %d", rec.Code)
	}
}

// TestDistIsBuiltFromTheSources rebuilds the assets with Node and compares them with the
// committed (embedded) dist/: a change to web/src without `make console` fails here.
func TestDistIsBuiltFromTheSources(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatal("node not found: the console's build check needs Node.js (Debian: apt-get install -y nodejs)")
	}
	out := t.TempDir()
	cmd := exec.Command(node, "web/build.mjs", out)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build.mjs: %v\n%s", err, b)
	}
	want := map[string][]byte{}
	err = filepath.WalkDir(out, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		rel, _ := filepath.Rel(out, p)
		want[filepath.ToSlash(rel)] = b
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string][]byte{}
	err = fs.WalkDir(dist, "dist", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := dist.ReadFile(p)
		got[strings.TrimPrefix(p, "dist/")] = b
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	for name, b := range want {
		if !bytes.Equal(got[name], b) {
			t.Errorf("dist/%s differs from what web/src builds: run `make console` and commit dist/", name)
		}
	}
	for name := range got {
		if _, ok := want[name]; !ok {
			t.Errorf("dist/%s is not built from web/src any more: run `make console`", name)
		}
	}
}
