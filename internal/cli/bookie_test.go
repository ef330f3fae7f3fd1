package cli

import (
	"strings"
	"testing"
)

func TestBookieConfigErrorsExit2(t *testing.T) {
	code, _, errOut := run(t, nil, "bookie", "--listen", "nonsense", "--journal-dir", t.TempDir(), "--ledger-dir", t.TempDir())
	if code != 2 || !strings.Contains(errOut, "bookieAddress") {
		t.Fatalf("bad listen address: exit %d, %q", code, errOut)
	}
	code, _, errOut = run(t, nil, "bookie", "--metadata-url", "zk://x", "--max-in-flight-bytes-per-connection", "10")
	if code != 2 || !strings.Contains(errOut, "metadataStoreUrl") || !strings.Contains(errOut, "maxInFlightBytesPerConnection") {
		t.Fatalf("bad limits: exit %d, %q", code, errOut)
	}
}

func TestPerfBookieUnreachableFails(t *testing.T) {
	code, _, errOut := run(t, nil, "perf", "bookie", "--bookie", "127.0.0.1:1", "--duration", "50ms", "--timeout", "1s")
	if code != 1 || !strings.Contains(errOut, "unreachable") {
		t.Fatalf("exit %d, %q", code, errOut)
	}
}
