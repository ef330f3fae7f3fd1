package cli

import (
	"strings"
	"testing"
)

// TestAdminCompactionCLI: `topics compact` and `topics compaction-status [-w]` print
// pulsar-admin's texts.
func TestAdminCompactionCLI(t *testing.T) {
	ok := func(args ...string) string {
		t.Helper()
		code, out, errOut := magnetarAdmin(t, args...)
		if code != 0 {
			t.Fatalf("%v: exit %d: %s", args, code, errOut)
		}
		return out
	}
	const topic = "persistent://public/default/cli-compact"
	ok("topics", "create", topic)
	if out := ok("topics", "compaction-status", topic); strings.TrimSpace(out) != "Compaction has not been run" {
		t.Fatalf("status before: %q", out)
	}
	if out := ok("topics", "compact", topic); strings.TrimSpace(out) != "Topic compaction requested for "+topic {
		t.Fatalf("compact: %q", out)
	}
	if out := ok("topics", "compaction-status", "-w", topic); strings.TrimSpace(out) != "Compaction was a success" {
		t.Fatalf("status after: %q", out)
	}
}
