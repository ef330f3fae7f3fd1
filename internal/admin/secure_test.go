package admin

import (
	"testing"

	"github.com/magnetar-io/magnetar/internal/auth"
)

// TestRouteRule pins how paths outside /admin/v2 are classified; the authorization matrix
// (internal/standalone) checks the decisions end to end.
func TestRouteRule(t *testing.T) {
	for _, c := range []struct {
		method, path string
		want         rule
	}{
		{"GET", "/ui/", rule{open: true}},
		{"GET", "/ui/assets/app.js", rule{open: true}},
		{"POST", "/ui/x", rule{kind: "super"}},
		{"POST", "/topics/persistent/t/ns/x", rule{kind: "topic", topic: auth.Topic{Tenant: "t", Namespace: "ns", Name: "persistent://t/ns/x"}, topicOp: auth.TopicProduce}},
		{"POST", "/topics/persistent/t/ns/x/partitions/2", rule{kind: "topic", topic: auth.Topic{Tenant: "t", Namespace: "ns", Name: "persistent://t/ns/x"}, topicOp: auth.TopicProduce}},
		{"GET", "/topics/persistent/t/ns/x", rule{kind: "super"}},
		{"POST", "/admin/v3/functions/t/ns/f", rule{kind: "namespace", tenant: "t", ns: "ns", nsOp: auth.NamespaceFunctions}},
		{"GET", "/admin/v3/functions/t/ns", rule{kind: "namespace", tenant: "t", ns: "ns", nsOp: auth.NamespaceFunctions}},
		{"DELETE", "/admin/v3/sources/t/ns/s", rule{kind: "namespace", tenant: "t", ns: "ns", nsOp: auth.NamespaceSources}},
		{"PUT", "/admin/v3/sinks/t/ns/s", rule{kind: "namespace", tenant: "t", ns: "ns", nsOp: auth.NamespaceSinks}},
		{"GET", "/admin/v3/sinks/builtinsinks", rule{kind: "authenticated"}},
		{"POST", "/admin/v3/functions/upload", rule{kind: "super"}},
		{"GET", "/admin/v3/functions/download", rule{kind: "super"}},
		{"GET", "/admin/v3/transactions/coordinatorStats", rule{kind: "authenticated"}},
		{"GET", "/admin/v3/transactions/transactionMetadata/0/1", rule{kind: "authenticated"}},
		{"GET", "/admin/v3/transactions/pendingAckStats/t/ns/x/s", rule{kind: "topic", topic: auth.Topic{Tenant: "t", Namespace: "ns", Name: "persistent://t/ns/x"}, topicOp: auth.TopicLookup}},
		{"POST", "/admin/v3/transactions/coordinatorStats", rule{kind: "super"}},
		{"GET", "/admin/v3/transactions/somethingElse", rule{kind: "super"}},
		{"GET", "/admin/v3/functions-state/t/ns/f/k", rule{open: true}}, // the worker checks its instance token
		{"POST", "/admin/v2/functions/t/ns/f", rule{kind: "namespace", tenant: "t", ns: "ns", nsOp: auth.NamespaceFunctions}},
		{"GET", "/admin/v2/sinks/t/ns", rule{kind: "namespace", tenant: "t", ns: "ns", nsOp: auth.NamespaceSinks}},
		{"GET", "/admin/v2/sources/builtinsources", rule{kind: "authenticated"}},
		{"PUT", "/admin/v3/functions-state/t/ns/f/k", rule{open: true}},
		{"GET", "/admin/v3", rule{kind: "super"}},
		{"GET", "/admin/v2/worker/cluster", rule{kind: "super"}},
		{"GET", "/somewhere/else", rule{kind: "super"}},
		{"GET", "/iceberg/v1/config", rule{kind: "authenticated"}},
		{"GET", "/iceberg/v1/namespaces", rule{kind: "authenticated"}},
		{"GET", "/iceberg/v1/namespaces/t\x1fns", rule{kind: "authenticated"}},
		{"GET", "/iceberg/v1/namespaces/t\x1fns/tables", rule{kind: "namespace", tenant: "t", ns: "ns", nsOp: auth.NamespaceListTopics}},
		{"GET", "/iceberg/v1/namespaces/t\x1fns/tables/x", rule{kind: "topic", topic: auth.Topic{Tenant: "t", Namespace: "ns", Name: "persistent://t/ns/x"}, topicOp: auth.TopicConsume}},
		{"POST", "/iceberg/v1/namespaces/t\x1fns/tables/x/metrics", rule{kind: "topic", topic: auth.Topic{Tenant: "t", Namespace: "ns", Name: "persistent://t/ns/x"}, topicOp: auth.TopicConsume}},
		{"GET", "/iceberg/v1/namespaces/t/tables", rule{kind: "super"}},
		{"GET", "/iceberg/v2/config", rule{kind: "super"}},
		// Namespace subscription verbs need consume on the namespace, per bundle too.
		{"POST", "/admin/v2/namespaces/t/ns/clearBacklog", rule{kind: "namespace", tenant: "t", ns: "ns", nsOp: auth.NamespaceConsume}},
		{"POST", "/admin/v2/namespaces/t/ns/0x00000000_0x40000000/clearBacklog/s", rule{kind: "namespace", tenant: "t", ns: "ns", nsOp: auth.NamespaceConsume}},
		{"POST", "/admin/v2/namespaces/t/ns/0x00000000_0x40000000/unsubscribe/s", rule{kind: "namespace", tenant: "t", ns: "ns", nsOp: auth.NamespaceConsume}},
		{"PUT", "/admin/v2/namespaces/t/ns/0x00000000_0x40000000/unload", rule{kind: "namespace", tenant: "t", ns: "ns", nsOp: auth.NamespaceAdmin}},
	} {
		if got := routeRule(c.method, c.path); got != c.want {
			t.Errorf("%s %s: %+v, want %+v", c.method, c.path, got, c.want)
		}
	}
}
