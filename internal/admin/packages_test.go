package admin_test

import (
	"bytes"
	"crypto/rand"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	pa "github.com/apache/pulsar-client-go/pulsaradmin/pkg/admin"
	paconfig "github.com/apache/pulsar-client-go/pulsaradmin/pkg/admin/config"
	"github.com/apache/pulsar-client-go/pulsaradmin/pkg/rest"
)

// packagesMaxSizeMB of the shared standalone (TestMain).
const testPackagesMaxMB = 2

// wantAdminError fails unless err is the admin API's answer code with a reason containing
// reason.
func wantAdminError(t *testing.T, what string, err error, code int, reason string) {
	t.Helper()
	var re rest.Error
	if !errors.As(err, &re) || re.Code != code || !strings.Contains(re.Reason, reason) {
		t.Fatalf("%s: %v, want %d %q", what, err, code, reason)
	}
}

func writeFile(t *testing.T, name string, data []byte) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestPackagesAPI drives /admin/v3/packages with pulsaradmin's Packages() client: upload
// (several ledger entries), metadata, lists, download, update, delete, and Pulsar's
// answers to an existing, a missing, a too large and a badly named package.
func TestPackagesAPI(t *testing.T) {
	c, err := pa.New(&paconfig.Config{WebServiceURL: "http://" + sa.HTTPAddr(), PulsarAPIVersion: paconfig.V3})
	if err != nil {
		t.Fatal(err)
	}
	p := c.Packages()
	data := make([]byte, 3<<19) // 1.5 MiB: two ledger entries
	if _, err := rand.Read(data); err != nil {
		t.Fatal(err)
	}
	file := writeFile(t, "fn.jar", data)
	const v1, v2 = "function://public/default/pkg@v1", "function://public/default/pkg@v2"
	if err := p.Upload(v1, file, "first", "ops@example.com", map[string]string{"team": "a"}); err != nil {
		t.Fatal(err)
	}
	md, err := p.GetMetadata(v1)
	if err != nil {
		t.Fatal(err)
	}
	if md.Description != "first" || md.Contact != "ops@example.com" || md.Properties["team"] != "a" || md.CreateTime == 0 || md.ModificationTime != 0 {
		t.Fatalf("metadata %+v", md)
	}
	wantAdminError(t, "upload again", p.Upload(v1, file, "again", "", nil), 404, "Package 'function://public/default/pkg@v1' metadata already exists")
	if err := p.Upload(v2, writeFile(t, "small.jar", []byte("v2 bytes")), "second", "", nil); err != nil {
		t.Fatal(err)
	}
	if vs, err := p.ListVersions("function://public/default/pkg"); err != nil || !slices.Equal(vs, []string{"v1", "v2"}) {
		t.Fatalf("versions %v, %v", vs, err)
	}
	if names, err := p.List("function", "public/default"); err != nil || !slices.Equal(names, []string{"pkg"}) {
		t.Fatalf("function packages %v, %v", names, err)
	}
	if names, err := p.List("sink", "public/default"); err != nil || len(names) != 0 {
		t.Fatalf("sink packages %v, %v", names, err)
	}

	out := filepath.Join(t.TempDir(), "down", "fn.jar")
	if err := p.Download(v1, out); err != nil {
		t.Fatal(err)
	}
	if got, err := os.ReadFile(out); err != nil || !bytes.Equal(got, data) {
		t.Fatalf("downloaded %d bytes (%v), want the %d uploaded", len(got), err, len(data))
	}

	if err := p.UpdateMetadata(v1, "renamed", "dev@example.com", map[string]string{"team": "b"}); err != nil {
		t.Fatal(err)
	}
	md2, err := p.GetMetadata(v1)
	if err != nil || md2.Description != "renamed" || md2.Contact != "dev@example.com" || md2.Properties["team"] != "b" ||
		md2.CreateTime != md.CreateTime || md2.ModificationTime == 0 {
		t.Fatalf("updated metadata %+v, %v (before %+v)", md2, err, md)
	}

	if err := p.Delete(v1); err != nil {
		t.Fatal(err)
	}
	if vs, err := p.ListVersions("function://public/default/pkg"); err != nil || !slices.Equal(vs, []string{"v2"}) {
		t.Fatalf("versions after delete %v, %v", vs, err)
	}
	_, err = p.GetMetadata(v1)
	wantAdminError(t, "metadata of a deleted package", err, 404, "Package 'function://public/default/pkg@v1' metadata does not exist")
	wantAdminError(t, "delete again", p.Delete(v1), 404, "does not exist")
	wantAdminError(t, "update a deleted package", p.UpdateMetadata(v1, "x", "", nil), 404, "does not exist")
	if err := p.Download(v1, filepath.Join(t.TempDir(), "gone")); err == nil {
		t.Fatal("downloaded a deleted package")
	}

	// Over packagesMaxSizeMB: 413 and nothing recorded.
	big := writeFile(t, "big.jar", make([]byte, testPackagesMaxMB<<20+1))
	wantAdminError(t, "too large", p.Upload("source://public/default/big@v1", big, "", "", nil), 413, "packagesMaxSizeMB")
	if names, err := p.List("source", "public/default"); err != nil || len(names) != 0 {
		t.Fatalf("source packages after a refused upload %v, %v", names, err)
	}
	// Exactly the bound is accepted.
	exact := writeFile(t, "exact.jar", make([]byte, testPackagesMaxMB<<20))
	if err := p.Upload("source://public/default/exact@v1", exact, "", "", nil); err != nil {
		t.Fatal(err)
	}
	if err := p.Delete("source://public/default/exact@v1"); err != nil {
		t.Fatal(err)
	}

	// pulsaradmin's default version (v2) reaches the same packages.
	c2 := adminClient(t)
	if vs, err := c2.Packages().ListVersions("function://public/default/pkg"); err != nil || !slices.Equal(vs, []string{"v2"}) {
		t.Fatalf("versions through v2 %v, %v", vs, err)
	}

	// A bad type or name is Pulsar's 412; a download of a missing package 404 with a reason.
	base := "http://" + sa.HTTPAddr() + "/admin/v3/packages/"
	for _, tc := range []struct {
		method, path string
		code         int
		reason       string
	}{
		{"GET", "jar/public/default/pkg/v2/metadata", 412, "Invalid package domain: 'jar'"},
		{"GET", "jar/public/default", 412, "Invalid package domain"},
		{"GET", "function/public/default/pk%40g/v2/metadata", 412, "Invalid package name"},
		{"GET", "function/public/default/ghost/v1", 404, "Package 'function://public/default/ghost@v1' does not exist"},
		{"POST", "function/public/default/pkg/v3", 400, "multipart"},
	} {
		req, _ := http.NewRequest(tc.method, base+tc.path, strings.NewReader("x"))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != tc.code || !strings.Contains(string(b), tc.reason) {
			t.Errorf("%s %s: %d %s, want %d %q", tc.method, tc.path, resp.StatusCode, b, tc.code, tc.reason)
		}
	}
	if err := p.Delete(v2); err != nil {
		t.Fatal(err)
	}
}
