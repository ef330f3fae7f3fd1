package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestAdminSourcesAndSinksCLI drives `magnetar admin sources|sinks` with pulsar-admin's
// verbs and flags against a standalone: the built-in lists, create from flags and from a
// YAML config file, get, status, stop/start, update, list, delete, and exit 2 for bad input.
func TestAdminSourcesAndSinksCLI(t *testing.T) {
	must := func(args ...string) string {
		t.Helper()
		var code int
		var out, errOut string
		// The worker may not lead yet right after the standalone starts.
		for deadline := time.Now().Add(2 * time.Minute); ; {
			code, out, errOut = magnetarAdmin(t, append([]string{"-o", "json"}, args...)...)
			if code == 0 || time.Now().After(deadline) || !strings.Contains(errOut, "503") {
				break
			}
			time.Sleep(200 * time.Millisecond)
		}
		if code != 0 {
			t.Fatalf("%v: exit %d\n%s%s", args, code, out, errOut)
		}
		return out
	}
	if out := must("sources", "available-sources"); !strings.Contains(out, `"debezium-mysql"`) || !strings.Contains(out, `"kafka"`) {
		t.Fatalf("available-sources: %s", out)
	}
	if out := must("sinks", "available-sinks"); !strings.Contains(out, `"jdbc-postgres"`) || !strings.Contains(out, `"redis"`) {
		t.Fatalf("available-sinks: %s", out)
	}
	must("sources", "reload")

	if out := must("sources", "create", "--name", "gen", "--source-type", "data-generator", "--destination-topic-name",
		"persistent://public/default/cli-gen", "--source-config", `{"sleepBetweenMessages": 100}`, "--parallelism", "1"); !strings.Contains(out, "Created successfully") {
		t.Fatalf("create: %s", out)
	}
	var cfg map[string]any
	if err := json.Unmarshal([]byte(must("sources", "get", "--tenant", "public", "--namespace", "default", "--name", "gen")), &cfg); err != nil ||
		cfg["topicName"] != "persistent://public/default/cli-gen" || cfg["archive"] != "builtin://data-generator" {
		t.Fatalf("get: %v %v", cfg, err)
	}
	must("sources", "update", "--name", "gen", "--source-config", `{"sleepBetweenMessages": 200}`)
	if err := json.Unmarshal([]byte(must("sources", "get", "--name", "gen")), &cfg); err != nil ||
		cfg["configs"].(map[string]any)["sleepBetweenMessages"] != float64(200) || cfg["topicName"] != "persistent://public/default/cli-gen" {
		t.Fatalf("after update: %v %v", cfg, err)
	}
	if out := must("sources", "status", "--name", "gen"); !strings.Contains(out, `"numInstances"`) {
		t.Fatalf("status: %s", out)
	}
	if out := must("sources", "stop", "--name", "gen", "--instance-id", "0"); !strings.Contains(out, "Stopped successfully") {
		t.Fatalf("stop: %s", out)
	}
	must("sources", "start", "--name", "gen")
	if out := must("sources", "list"); !strings.Contains(out, "gen") {
		t.Fatalf("list: %s", out)
	}

	file := filepath.Join(t.TempDir(), "sink.yaml")
	if err := os.WriteFile(file, []byte("tenant: public\nnamespace: default\nname: print\narchive: builtin://data-generator\ninputs: [persistent://public/default/cli-gen]\nparallelism: 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	must("sinks", "create", "--sink-config-file", file, "--subs-position", "Earliest", "--max-redeliver-count", "3")
	if err := json.Unmarshal([]byte(must("sinks", "get", "--name", "print")), &cfg); err != nil ||
		cfg["sourceSubscriptionPosition"] != "Earliest" || cfg["maxMessageRetries"] != float64(3) {
		t.Fatalf("sink get: %v %v", cfg, err)
	}
	must("sinks", "delete", "--name", "print")
	if out := must("sources", "delete", "--name", "gen"); !strings.Contains(out, "Deleted successfully") {
		t.Fatalf("delete: %s", out)
	}

	for _, bad := range [][]string{
		{"sources", "create", "--name", "x", "--source-type", "file", "--source-config", "{not json"},
		{"sources", "create", "--source-type", "file"},
		{"sinks", "localrun", "--name", "x"},
	} {
		if code, _, errOut := magnetarAdmin(t, bad...); code != 2 {
			t.Errorf("%v: exit %d (want 2): %s", bad, code, errOut)
		}
	}
	if code, _, errOut := magnetarAdmin(t, "sources", "create", "--name", "y", "--source-type", "no-such-connector", "--destination-topic-name", "t"); code == 0 || !strings.Contains(errOut, "archive") {
		t.Errorf("unknown connector: exit %d: %s", code, errOut)
	}
}
