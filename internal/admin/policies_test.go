package admin_test

import (
	"encoding/json"
	"testing"
)

func TestNamespacePolicies(t *testing.T) {
	srv := newServer(t)
	mustDo := func(method, path, body string, want int) string {
		t.Helper()
		code, resp := do(t, srv, method, path, body)
		if code != want {
			t.Fatalf("%s %s: status %d, want %d (%s)", method, path, code, want, resp)
		}
		return resp
	}
	mustDo("PUT", "/admin/v2/tenants/t", `{"allowedClusters":["standalone"]}`, 204)
	mustDo("PUT", "/admin/v2/namespaces/t/n", `{"auth_policies":{"namespace_auth":{"anonymous":["produce","consume"]}},"replication_clusters":["standalone"]}`, 204)
	const ns = "/admin/v2/namespaces/t/n/"

	if got := mustDo("GET", ns+"retention", "", 204); got != "" {
		t.Fatalf("unset retention = %s", got)
	}
	mustDo("POST", ns+"retention", `{"retentionTimeInMinutes":60,"retentionSizeInMB":100}`, 204)
	mustDo("POST", ns+"messageTTL", `120`, 204)
	mustDo("POST", ns+"messageTTL", `-1`, 400)
	mustDo("POST", ns+"deduplication", `true`, 204)
	mustDo("POST", ns+"persistence", `{"bookkeeperEnsemble":1,"bookkeeperWriteQuorum":2,"bookkeeperAckQuorum":1}`, 400)
	mustDo("POST", ns+"persistence", `{"bookkeeperEnsemble":3,"bookkeeperWriteQuorum":3,"bookkeeperAckQuorum":2}`, 204)
	mustDo("POST", ns+"autoTopicCreation", `{"allowAutoTopicCreation":true,"topicType":"partitioned","defaultNumPartitions":4}`, 204)
	mustDo("POST", ns+"autoTopicCreation", `{"allowAutoTopicCreation":true,"topicType":"weird"}`, 400)
	mustDo("POST", ns+"backlogQuota", `{"limit": "10240", "policy": "producer_request_hold"}`, 204)
	mustDo("POST", ns+"backlogQuota?backlogQuotaType=message_age", `{"limitTime":60,"policy":"consumer_backlog_eviction"}`, 204)
	mustDo("POST", ns+"backlogQuota", `{"limitSize":1,"policy":"drop_everything"}`, 400)
	mustDo("POST", ns+"permissions/alice", `["produce"]`, 204)
	mustDo("POST", ns+"permissions/bob", `["fly"]`, 400)
	mustDo("PUT", ns+"properties", `{"team":"core"}`, 204)
	mustDo("POST", "/admin/v2/namespaces/t/missing/retention", `{"retentionTimeInMinutes":1}`, 404)

	var p struct {
		Retention struct{ RetentionTimeInMinutes int } `json:"retention_policies"`
		TTL       int                                  `json:"message_ttl_in_seconds"`
		Dedup     bool                                 `json:"deduplicationEnabled"`
		Quotas    map[string]struct {
			LimitSize int64
			LimitTime int64
			Policy    string
		} `json:"backlog_quota_map"`
		Auth struct {
			NamespaceAuth map[string][]string `json:"namespace_auth"`
		} `json:"auth_policies"`
		Properties map[string]string `json:"properties"`
	}
	if err := json.Unmarshal([]byte(mustDo("GET", "/admin/v2/namespaces/t/n", "", 200)), &p); err != nil {
		t.Fatal(err)
	}
	if p.Retention.RetentionTimeInMinutes != 60 || p.TTL != 120 || !p.Dedup || p.Properties["team"] != "core" {
		t.Fatalf("policies not applied: %+v", p)
	}
	if q := p.Quotas["destination_storage"]; q.LimitSize != 10240 || q.Policy != "producer_request_hold" {
		t.Fatalf("legacy backlog quota: %+v", p.Quotas)
	}
	if q := p.Quotas["message_age"]; q.LimitTime != 60 {
		t.Fatalf("message_age quota: %+v", p.Quotas)
	}
	if len(p.Auth.NamespaceAuth["alice"]) != 1 || len(p.Auth.NamespaceAuth["anonymous"]) != 2 {
		t.Fatalf("permissions: %+v", p.Auth)
	}
	mustDo("DELETE", ns+"retention", "", 204)
	if got := mustDo("GET", ns+"retention", "", 204); got != "" {
		t.Fatalf("deleted retention = %s", got)
	}
	mustDo("DELETE", ns+"permissions/alice", "", 204)
	if got := mustDo("GET", ns+"permissions", "", 200); got != `{"anonymous":["produce","consume"]}` {
		t.Fatalf("permissions after revoke = %s", got)
	}
}
