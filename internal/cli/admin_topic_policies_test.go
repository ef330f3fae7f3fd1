package cli

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// TestAdminTopicPoliciesCLI runs the topic-level policy and permission verbs through the
// real binary, in both the topics and the topic-policies groups.
func TestAdminTopicPoliciesCLI(t *testing.T) {
	ok := func(args ...string) string {
		t.Helper()
		code, out, errOut := magnetarAdmin(t, args...)
		if code != 0 {
			t.Fatalf("%v: exit %d: %s", args, code, errOut)
		}
		return out
	}
	is := func(out, want string) {
		t.Helper()
		if strings.TrimSpace(out) != want {
			t.Fatalf("got %q, want %q", out, want)
		}
	}
	has := func(out string, want ...string) {
		t.Helper()
		for _, w := range want {
			if !strings.Contains(out, w) {
				t.Fatalf("want %q in %q", w, out)
			}
		}
	}
	ok("namespaces", "create", "public/clitp")
	const topic = "public/clitp/t"
	ok("topics", "create", topic)

	ok("topics", "set-message-ttl", topic, "-t", "120")
	is(ok("topics", "get-message-ttl", topic), "120")
	ok("topicPolicies", "set-message-ttl", topic, "--ttl", "60")
	is(ok("topic-policies", "get-message-ttl", topic), "60")
	ok("topics", "remove-message-ttl", topic)
	is(ok("topics", "get-message-ttl", topic), "-")
	ok("namespaces", "set-message-ttl", "public/clitp", "--messageTTL", "30")
	is(ok("topics", "get-message-ttl", topic, "--applied"), "30")

	ok("topics", "set-retention", topic, "-s", "1G", "-t", "2h")
	has(ok("topics", "get-retention", topic, "-o", "json"), `"retentionSizeInMB": 1024`, `"retentionTimeInMinutes": 120`)
	ok("topic-policies", "remove-retention", topic)
	is(ok("topics", "get-retention", topic), "-")

	ok("topics", "set-deduplication", topic, "--enable")
	is(ok("topics", "get-deduplication", topic), "true")
	ok("topics", "remove-deduplication", topic)

	ok("topics", "set-backlog-quota", topic, "-l", "10M", "-p", "producer_exception")
	ok("topics", "set-backlog-quota", topic, "--limitTime", "600", "-p", "consumer_backlog_eviction", "-t", "message_age")
	has(ok("topics", "get-backlog-quotas", topic, "-o", "json"), `"limitSize": 10485760`, `"limitTime": 600`)
	ok("topics", "remove-backlog-quota", topic, "-t", "message_age")
	if out := ok("topics", "get-backlog-quotas", topic, "-o", "json"); strings.Contains(out, "message_age") {
		t.Fatalf("quota not removed: %q", out)
	}

	ok("topics", "set-max-producers", topic, "-p", "3")
	is(ok("topics", "get-max-producers", topic), "3")
	ok("topic-policies", "set-max-consumers", topic, "--max-consumers", "4")
	is(ok("topics", "get-max-consumers", topic), "4")
	ok("topics", "remove-max-producers", topic)
	ok("topics", "remove-max-consumers", topic)
	is(ok("topics", "get-max-producers", topic), "-")

	ok("topics", "grant-permission", topic, "--role", "app", "--actions", "produce,consume")
	has(ok("topics", "permissions", topic, "-o", "json"), `"app": [`)
	ok("topics", "revoke-permission", topic, "--role", "app")
	if code, _, errOut := magnetarAdmin(t, "topics", "revoke-permission", topic, "--role", "app"); code != 1 || !strings.Contains(errOut, "412") {
		t.Fatalf("revoke twice: exit %d %q", code, errOut)
	}

	// Bad input: a negative limit is the server's 400, a missing flag a usage error (2).
	if code, _, errOut := magnetarAdmin(t, "topics", "set-max-producers", topic, "-p", "-1"); code != 1 || !strings.Contains(errOut, "400") {
		t.Fatalf("negative limit: exit %d %q", code, errOut)
	}
	if code, _, _ := magnetarAdmin(t, "topics", "set-message-ttl", topic); code == 0 {
		t.Fatal("set-message-ttl without --ttl succeeded")
	}
	if code, _, errOut := magnetarAdmin(t, "topics", "get-message-ttl", "public/nosuchns/t"); code != 1 || !strings.Contains(errOut, "404") {
		t.Fatalf("unknown namespace: exit %d %q", code, errOut)
	}
	ok("topics", "create-subscription", topic, "-s", "gone")
	ok("namespaces", "unsubscribe", "public/clitp", "-s", "gone")
	is(ok("topics", "subscriptions", topic), "")
	ok("namespaces", "set-max-producers-per-topic", "public/clitp", "-p", "5")
	is(ok("namespaces", "get-max-producers-per-topic", "public/clitp"), "5")
	is(ok("topics", "get-max-producers", topic, "--applied"), "5")
	ok("namespaces", "remove-max-producers-per-topic", "public/clitp")
	ok("namespaces", "set-max-consumers-per-topic", "public/clitp", "-c", "6")
	is(ok("namespaces", "get-max-consumers-per-topic", "public/clitp"), "6")
	ok("namespaces", "set-properties", "public/clitp", "-p", "a=1", "-p", "b=2")
	has(ok("namespaces", "get-properties", "public/clitp", "-o", "json"), `"a": "1"`, `"b": "2"`)
	ok("namespaces", "grant-subscription-permission", "public/clitp", "--subscription", "s1", "--roles", "a,b")
	ok("namespaces", "revoke-subscription-permission", "public/clitp", "--subscription", "s1", "--role", "a")
	has(ok("namespaces", "subscription-permission", "public/clitp", "-o", "json"), `"s1": [`, `"b"`)
	ok("namespaces", "clear-properties", "public/clitp")
	is(ok("namespaces", "get-properties", "public/clitp", "-o", "json"), "{}")
	ok("topics", "delete", topic)
	ok("namespaces", "delete", "public/clitp")
}

// TestAdminClusterRecordsCLI runs the cluster record and namespace cluster verbs through
// the real binary.
func TestAdminClusterRecordsCLI(t *testing.T) {
	ok := func(args ...string) string {
		t.Helper()
		code, out, errOut := magnetarAdmin(t, args...)
		if code != 0 {
			t.Fatalf("%v: exit %d: %s", args, code, errOut)
		}
		return out
	}
	ok("clusters", "create", "cli-west", "--url", "http://west:8080", "--broker-url", "pulsar://west:6650")
	if out := ok("clusters", "get", "cli-west"); !strings.Contains(out, "pulsar://west:6650") {
		t.Fatalf("cluster get: %q", out)
	}
	ok("clusters", "update", "cli-west", "--url", "http://west2:8080")
	ok("clusters", "update-peer-clusters", "cli-west", "--peer-clusters", "standalone")
	if out := ok("clusters", "get-peer-clusters", "cli-west"); strings.TrimSpace(out) != "standalone" {
		t.Fatalf("peers: %q", out)
	}
	if out := ok("namespaces", "get-clusters", "public/default"); strings.TrimSpace(out) != "standalone" {
		t.Fatalf("get-clusters: %q", out)
	}
	ok("namespaces", "set-clusters", "public/default", "-c", "standalone")
	if code, _, errOut := magnetarAdmin(t, "namespaces", "set-clusters", "public/default", "-c", "nosuch"); code != 1 || !strings.Contains(errOut, "412") {
		t.Fatalf("unknown cluster: exit %d %q", code, errOut)
	}
	if code, _, errOut := magnetarAdmin(t, "clusters", "delete", "standalone"); code != 1 || !strings.Contains(errOut, "412") {
		t.Fatalf("delete own cluster: exit %d %q", code, errOut)
	}
	ok("clusters", "delete", "cli-west")
	if code, _, errOut := magnetarAdmin(t, "clusters", "get", "cli-west"); code != 1 || !strings.Contains(errOut, "404") {
		t.Fatalf("deleted cluster: exit %d %q", code, errOut)
	}
}

// TestAdminTopicExtrasCLI runs the topic properties and message lookup verbs.
func TestAdminTopicExtrasCLI(t *testing.T) {
	ok := func(args ...string) string {
		t.Helper()
		code, out, errOut := magnetarAdmin(t, args...)
		if code != 0 {
			t.Fatalf("%v: exit %d: %s", args, code, errOut)
		}
		return out
	}
	const topic = "persistent://public/default/cli-extras"
	ok("topics", "create", topic)
	ok("topics", "create-subscription", topic, "-s", "s", "-m", "earliest")
	if code, _, errOut := magnetarRun(t, "client", "produce", topic, "--url", "pulsar://"+shared.sa.BrokerAddr(), "-m", "hello", "-p", "k=v", "--disable-batching"); code != 0 {
		t.Fatalf("produce: %s", errOut)
	}
	ok("topics", "update-properties", topic, "-p", "team=core", "-p", "x=1")
	ok("topics", "remove-properties", topic, "-k", "x")
	if out := ok("topics", "get-properties", topic, "-o", "json"); !strings.Contains(out, `"team": "core"`) || strings.Contains(out, `"x"`) {
		t.Fatalf("properties: %q", out)
	}
	var id struct{ LedgerID, EntryID int64 }
	if err := json.Unmarshal([]byte(ok("topics", "get-message-id", topic, "-d", "2000-01-01T00:00:00Z", "-o", "json")), &id); err != nil {
		t.Fatal(err)
	}
	out := ok("topics", "get-message-by-id", topic, "-l", fmt.Sprint(id.LedgerID), "-e", fmt.Sprint(id.EntryID))
	if !strings.Contains(out, "hello") || !strings.Contains(out, "Property k: v") {
		t.Fatalf("get-message-by-id: %q", out)
	}
	ok("topics", "expire-messages-all-subscriptions", topic, "-t", "0")
	if out := ok("topics", "stats", topic, "-o", "json"); !strings.Contains(out, `"msgBacklog": 0`) {
		t.Fatalf("backlog after expire: %q", out)
	}
	if code, _, errOut := magnetarAdmin(t, "topics", "get-message-id", topic, "-d", "yesterday"); code != 2 || !strings.Contains(errOut, "--datetime") {
		t.Fatalf("bad datetime: exit %d %q", code, errOut)
	}
	if out := ok("topics", "bundle-range", topic); !strings.HasPrefix(out, "0x") || !strings.Contains(out, "_0x") {
		t.Fatalf("bundle-range: %q", out)
	}
	ok("topics", "delete", topic, "-f")
}
