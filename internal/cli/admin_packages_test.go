package cli

import (
	"bytes"
	"crypto/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestAdminPackagesCLI runs `magnetar admin packages ...` through the real binary against
// the shared standalone (packages management on): every pulsar-admin verb, with its flags
// and messages, and the errors of a missing package and a bad name.
func TestAdminPackagesCLI(t *testing.T) {
	ok := func(args ...string) string { t.Helper(); return adminOK(t, args...) }
	dir := t.TempDir()
	data := make([]byte, 1<<20+123) // more than one ledger entry
	if _, err := rand.Read(data); err != nil {
		t.Fatal(err)
	}
	src := filepath.Join(dir, "sink.nar")
	if err := os.WriteFile(src, data, 0o644); err != nil {
		t.Fatal(err)
	}
	const u = "sink://public/default/cli-sink@1.0"
	if out := ok("packages", "upload", u, "--path", src, "--description", "a sink", "--contact", "me", "-P", "k=v"); !strings.Contains(out, "The package '"+u+"' uploaded from path '"+src+"' successfully") {
		t.Fatalf("upload: %q", out)
	}
	if out := ok("packages", "get-metadata", u, "-o", "json"); !strings.Contains(out, `"description": "a sink"`) || !strings.Contains(out, `"k": "v"`) || !strings.Contains(out, `"createTime"`) {
		t.Fatalf("get-metadata: %q", out)
	}
	if out := ok("packages", "update-metadata", u, "--description", "renamed"); !strings.Contains(out, "updated successfully") {
		t.Fatalf("update-metadata: %q", out)
	}
	if out := ok("packages", "get-metadata", u, "-o", "json"); !strings.Contains(out, `"description": "renamed"`) || !strings.Contains(out, `"modificationTime"`) {
		t.Fatalf("get-metadata after update: %q", out)
	}
	if out := ok("packages", "list", "--type", "sink", "public/default"); strings.TrimSpace(out) != "cli-sink" {
		t.Fatalf("list: %q", out)
	}
	if out := ok("packages", "list-versions", "sink://public/default/cli-sink"); strings.TrimSpace(out) != "1.0" {
		t.Fatalf("list-versions: %q", out)
	}
	dest := filepath.Join(dir, "out", "copy.nar")
	if out := ok("packages", "download", u, "--path", dest); !strings.Contains(out, "downloaded to path") {
		t.Fatalf("download: %q", out)
	}
	if got, err := os.ReadFile(dest); err != nil || !bytes.Equal(got, data) {
		t.Fatalf("downloaded %d bytes (%v), want %d", len(got), err, len(data))
	}
	if out := ok("packages", "delete", u); !strings.Contains(out, "The package '"+u+"' deleted successfully") {
		t.Fatalf("delete: %q", out)
	}
	if code, _, errOut := magnetarAdmin(t, "packages", "download", u, "--path", filepath.Join(dir, "gone")); code != 1 || !strings.Contains(errOut, "404") || !strings.Contains(errOut, "does not exist") {
		t.Fatalf("download of a deleted package: exit %d %q", code, errOut)
	}
	if _, err := os.Stat(filepath.Join(dir, "gone")); err == nil {
		t.Fatal("a failed download left a file")
	}
	if code, _, errOut := magnetarAdmin(t, "packages", "get-metadata", "jar://public/default/x@1"); code == 0 || !strings.Contains(errOut, "Invalid package domain") {
		t.Fatalf("bad type: exit %d %q", code, errOut)
	}
	if code, _, errOut := magnetarAdmin(t, "packages", "upload", u, "--path", src); code == 0 || !strings.Contains(errOut, "description") {
		t.Fatalf("upload without --description: exit %d %q", code, errOut)
	}
}
