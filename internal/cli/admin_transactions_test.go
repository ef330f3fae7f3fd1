package cli

import (
	"strings"
	"testing"
)

// TestAdminTransactionsCLI runs `magnetar admin transactions ...` through the real binary
// against the shared standalone (transactions on).
func TestAdminTransactionsCLI(t *testing.T) {
	ok := func(args ...string) string {
		t.Helper()
		code, out, errOut := magnetarAdmin(t, args...)
		if code != 0 {
			t.Fatalf("%v: exit %d: %s", args, code, errOut)
		}
		return out
	}
	if out := ok("transactions", "coordinator-stats", "-o", "json"); !strings.Contains(out, `"0"`) || !strings.Contains(out, `"state": "Ready"`) {
		t.Fatalf("coordinator-stats: %q", out)
	}
	if out := ok("transactions", "coordinator-stats", "-c", "0", "-o", "json"); !strings.Contains(out, `"leastSigBits"`) {
		t.Fatalf("coordinator-stats -c 0: %q", out)
	}
	if out := ok("transactions", "slow-transactions", "--time", "1h", "-o", "json"); strings.TrimSpace(out) != "{}" {
		t.Fatalf("slow-transactions: %q", out)
	}
	if code, _, errOut := magnetarAdmin(t, "transactions", "transaction-metadata", "-m", "0", "-l", "123456"); code != 1 || !strings.Contains(errOut, "404") {
		t.Fatalf("metadata of an unknown transaction: exit %d %q", code, errOut)
	}
	if code, _, errOut := magnetarAdmin(t, "transactions", "slow-transactions", "--time", "soon"); code == 0 || !strings.Contains(errOut, "duration") {
		t.Fatalf("bad --time: exit %d %q", code, errOut)
	}
	if code, _, errOut := magnetarAdmin(t, "transactions", "transaction-buffer-stats", "-t", "non-persistent://public/default/x"); code == 0 || !strings.Contains(errOut, "persistent") {
		t.Fatalf("non-persistent topic: exit %d %q", code, errOut)
	}
}
