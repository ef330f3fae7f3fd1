package cli

import (
	"strings"
	"testing"
)

// TestAdminOffloadAndLimitVerbs runs the offload-policy and limit verbs of
// admin_policy_verbs.go through the real binary: set, read back, remove.
func TestAdminOffloadAndLimitVerbs(t *testing.T) {
	ok := func(args ...string) string {
		t.Helper()
		code, out, errOut := magnetarAdmin(t, args...)
		if code != 0 {
			t.Fatalf("%v: exit %d: %s", args, code, errOut)
		}
		return strings.TrimSpace(out)
	}
	const ns = "public/default"
	ok("namespaces", "set-offload-threshold", ns, "--size", "10M")
	if got := ok("namespaces", "get-offload-threshold", ns); got != "10485760" {
		t.Fatalf("offload threshold %q", got)
	}
	ok("namespaces", "set-offload-deletion-lag", ns, "--lag", "2h")
	if got := ok("namespaces", "get-offload-deletion-lag", ns); got != "7200000" {
		t.Fatalf("deletion lag %q", got)
	}
	ok("namespaces", "clear-offload-deletion-lag", ns)
	if got := ok("namespaces", "get-offload-deletion-lag", ns); got != "-" {
		t.Fatalf("cleared deletion lag %q", got)
	}
	ok("namespaces", "set-offload-policies", ns, "--offloadAfterThreshold", "1G", "--offloadAfterElapsed", "1h")
	if got := ok("namespaces", "get-offload-policies", ns, "-o", "json"); !strings.Contains(got, `"managedLedgerOffloadThresholdInBytes": 1073741824`) ||
		!strings.Contains(got, `"managedLedgerOffloadDeletionLagInMillis": 3600000`) {
		t.Fatalf("offload policies %q", got)
	}
	ok("namespaces", "remove-offload-policies", ns)
	if got := ok("namespaces", "get-offload-policies", ns); got != "-" {
		t.Fatalf("removed offload policies %q", got)
	}

	const topic = "public/default/cli-more-policies"
	ok("topics", "create", topic)
	ok("topics", "set-max-unacked-messages-per-consumer", topic, "-m", "5")
	if got := ok("topics", "get-max-unacked-messages-per-consumer", topic); got != "5" {
		t.Fatalf("topic max unacked %q", got)
	}
	ok("topic-policies", "set-offload-policies", topic, "--offloadAfterThresholdInSeconds", "1h")
	if got := ok("topics", "get-offload-policies", topic, "-o", "json"); !strings.Contains(got, `"managedLedgerOffloadThresholdInSeconds": 3600`) {
		t.Fatalf("topic offload policies %q", got)
	}
	if code, _, _ := magnetarAdmin(t, "namespaces", "set-max-topics-per-namespace", ns, "-t", "-1"); code == 0 {
		t.Fatal("a negative max-topics-per-namespace was accepted")
	}

	// subscription-auth-mode: set/get only, as pulsar-admin; a mode it does not know is a
	// usage error that changes nothing.
	if got := ok("namespaces", "get-subscription-auth-mode", ns); strings.Trim(got, `"`) != "None" {
		t.Fatalf("default subscription auth mode %q", got)
	}
	ok("namespaces", "set-subscription-auth-mode", ns, "-m", "Prefix")
	if code, _, _ := magnetarAdmin(t, "namespaces", "set-subscription-auth-mode", ns, "-m", "Suffix"); code == 0 {
		t.Fatal("subscription auth mode Suffix was accepted")
	}
	if got := ok("namespaces", "get-subscription-auth-mode", ns); strings.Trim(got, `"`) != "Prefix" {
		t.Fatalf("subscription auth mode %q", got)
	}
	ok("namespaces", "set-subscription-auth-mode", ns, "--subscription-auth-mode", "None")
}
