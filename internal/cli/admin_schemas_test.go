package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestAdminSchemasCLI runs `magnetar admin schemas ...` and the namespace schema verbs
// through the real binary.
func TestAdminSchemasCLI(t *testing.T) {
	ok := func(args ...string) string {
		t.Helper()
		code, out, errOut := magnetarAdmin(t, args...)
		if code != 0 {
			t.Fatalf("%v: exit %d: %s", args, code, errOut)
		}
		return out
	}
	dir := t.TempDir()
	write := func(name, def string) string {
		b, _ := json.Marshal(map[string]any{"type": "AVRO", "schema": def, "properties": map[string]string{}})
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	v1 := write("v1.json", `{"type":"record","name":"R","fields":[{"name":"a","type":"int"}]}`)
	v2 := write("v2.json", `{"type":"record","name":"R","fields":[{"name":"a","type":"int"},{"name":"b","type":"string","default":"x"}]}`)
	bad := write("bad.json", `{"type":"record","name":"R","fields":[{"name":"a","type":"string"}]}`)

	ok("namespaces", "create", "public/clischema")
	ok("namespaces", "set-schema-compatibility-strategy", "public/clischema", "-c", "backward")
	if out := ok("namespaces", "get-schema-compatibility-strategy", "public/clischema"); strings.TrimSpace(out) != "BACKWARD" {
		t.Fatalf("strategy = %q", out)
	}
	const topic = "public/clischema/t"
	ok("schemas", "upload", topic, "-f", v1)
	out := ok("schemas", "compatibility", topic, "-f", bad, "-o", "json")
	var c struct {
		Compatibility bool   `json:"compatibility"`
		Strategy      string `json:"schemaCompatibilityStrategy"`
	}
	if err := json.Unmarshal([]byte(out), &c); err != nil || c.Compatibility || c.Strategy != "BACKWARD" {
		t.Fatalf("compatibility: %q %v", out, err)
	}
	if code, _, errOut := magnetarAdmin(t, "schemas", "upload", topic, "-f", bad); code != 1 || !strings.Contains(errOut, "409") {
		t.Fatalf("incompatible upload: exit %d %q", code, errOut)
	}
	ok("schemas", "upload", topic, "-f", v2)
	if out := ok("schemas", "get", topic); !strings.Contains(out, "version") || !strings.Contains(out, "AVRO") || !strings.Contains(out, `"b"`) {
		t.Fatalf("get: %q", out)
	}
	if out := ok("schemas", "get", topic, "--version", "0", "-o", "json"); !strings.Contains(out, `"version": 0`) {
		t.Fatalf("get --version 0: %q", out)
	}
	if out := ok("schemas", "get", topic, "--all", "-o", "json"); strings.Count(out, `"type": "AVRO"`) != 2 {
		t.Fatalf("get --all: %q", out)
	}
	if out := ok("schemas", "version", topic, "-f", v2); !strings.Contains(out, "1") {
		t.Fatalf("version: %q", out)
	}
	ok("schemas", "delete", topic)
	if code, _, errOut := magnetarAdmin(t, "schemas", "get", topic); code != 1 || !strings.Contains(errOut, "404") {
		t.Fatalf("get after delete: exit %d %q", code, errOut)
	}
	ok("namespaces", "set-is-allow-auto-update-schema", "public/clischema", "--disable")
	if out := ok("namespaces", "get-is-allow-auto-update-schema", "public/clischema"); strings.TrimSpace(out) != "false" {
		t.Fatalf("auto update = %q", out)
	}
	if code, _, _ := magnetarAdmin(t, "schemas", "upload", topic); code != 2 {
		t.Fatalf("upload without -f: exit %d", code)
	}
	if code, _, _ := magnetarAdmin(t, "schemas", "upload", topic, "-f", filepath.Join(dir, "missing.json")); code != 2 {
		t.Fatalf("upload of a missing file: exit %d", code)
	}
}
