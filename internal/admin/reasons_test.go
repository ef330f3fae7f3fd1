package admin_test

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/apache/pulsar-client-go/pulsaradmin/pkg/rest"
	"github.com/apache/pulsar-client-go/pulsaradmin/pkg/utils"
)

// TestPulsarReasons checks, on the real standalone, that missing, existing and non-empty
// things answer with Pulsar's status and exact reason text (clients compare them), and that
// a 404's body still names what is missing (in "detail" where Pulsar's reason does not).
func TestPulsarReasons(t *testing.T) {
	base := "http://" + sa.HTTPAddr()
	const ns = "/admin/v2/namespaces/reasons/ns"
	const topic = "/admin/v2/persistent/reasons/ns/t"
	for _, tc := range []struct {
		method, path, body string
		want               int
		reason             string // "" for setup rows
	}{
		{"PUT", "/admin/v2/tenants/reasons", `{"allowedClusters":["standalone"]}`, 204, ""},
		{"PUT", ns, "", 204, ""},
		{"PUT", topic, "", 204, ""},
		{"PUT", "/admin/v2/persistent/reasons/ns/p/partitions", "2", 204, ""},

		{"GET", "/admin/v2/clusters/nosuch", "", 404, "Cluster does not exist"},
		{"GET", "/admin/v2/tenants/nosuch", "", 404, "Tenant does not exist"},
		{"POST", "/admin/v2/tenants/nosuch", `{"allowedClusters":["standalone"]}`, 404, "Tenant does not exist"},
		{"DELETE", "/admin/v2/tenants/nosuch", "", 404, "Tenant does not exist"},
		{"GET", "/admin/v2/namespaces/nosuch", "", 404, "Tenant not found"},
		{"PUT", "/admin/v2/namespaces/nosuch/ns", "", 404, "Tenant does not exist"},
		{"GET", "/admin/v2/namespaces/nosuch/ns", "", 404, "Tenant does not exist"},
		{"GET", "/admin/v2/namespaces/reasons/nosuch", "", 404, "Namespace does not exist"},
		{"POST", "/admin/v2/namespaces/reasons/nosuch/messageTTL", "10", 404, "Namespace does not exist"},
		{"POST", "/admin/v2/namespaces/nosuch/ns/messageTTL", "10", 404, "Tenant does not exist"},
		{"GET", "/admin/v2/namespaces/reasons/nosuch/retention", "", 404, "Namespace does not exist"},
		{"DELETE", "/admin/v2/namespaces/reasons/nosuch", "", 404, "Namespace reasons/nosuch does not exist."},
		{"GET", "/admin/v2/persistent/nosuch/ns/t/stats", "", 404, "Tenant does not exist"},
		{"GET", "/admin/v2/persistent/reasons/nosuch/t/stats", "", 404, "Namespace does not exist"},
		{"GET", "/admin/v2/persistent/reasons/ns/nosuch/stats", "", 404, "Topic persistent://reasons/ns/nosuch not found"},
		{"DELETE", "/admin/v2/persistent/reasons/ns/nosuch", "", 404, "Topic persistent://reasons/ns/nosuch not found"},
		{"POST", "/admin/v2/persistent/reasons/ns/nosuch/partitions", "3", 404, "Partitioned Topic persistent://reasons/ns/nosuch not found"},
		{"DELETE", topic + "/subscription/nosuch", "", 404, "Subscription nosuch not found for topic persistent://reasons/ns/t"},
		{"GET", "/admin/v2/persistent/reasons/ns/nosuch/partitioned-internalStats", "", 404, "Partitioned Topic persistent://reasons/ns/nosuch not found"},
		{"POST", "/admin/v2/persistent/reasons/ns/p/subscription/s/skip/1", "", 405, "Skip messages on a partitioned topic is not allowed"},
		{"GET", "/admin/v2/persistent/reasons/ns/p/subscription/s/position/1", "", 405, "Peek messages on a partitioned topic is not allowed"},
		{"DELETE", "/admin/v2/tenants/reasons?force=true", "", 405, "Broker doesn't allow forced deletion of tenants"},
		{"POST", topic + "/terminate/partitions", "", 405, "Termination of a non-partitioned topic is not allowed using partitioned-terminate, please use terminate commands."},
		{"GET", "/admin/v3/packages/jar/reasons/ns", "", 412, "Invalid package domain: 'jar'"},
		{"GET", "/admin/v3/packages/function/reasons/ns/nosuch/1/metadata", "", 404, "Package 'function://reasons/ns/nosuch@1' metadata does not exist"},
		{"GET", "/admin/v3/packages/function/reasons/ns/nosuch/1", "", 404, "Package 'function://reasons/ns/nosuch@1' does not exist"},
		{"DELETE", "/admin/v3/packages/function/reasons/ns/nosuch/1", "", 404, "Package 'function://reasons/ns/nosuch@1' does not exist"},

		{"PUT", "/admin/v2/tenants/reasons", `{"allowedClusters":["standalone"]}`, 409, "Tenant already exists"},
		{"PUT", ns, "", 409, "Namespace already exists"},
		{"PUT", topic, "", 409, "This topic already exists"},
		{"PUT", "/admin/v2/persistent/reasons/ns/p/partitions", "2", 409, "This topic already exists"},
		{"PUT", "/admin/v2/persistent/reasons/ns/p", "", 409, "This topic already exists"},
		{"DELETE", "/admin/v2/tenants/reasons", "", 409, "The tenant still has active namespaces"},
		{"DELETE", ns, "", 409, "Cannot delete non empty namespace"},

		{"DELETE", topic, "", 204, ""},
		{"DELETE", "/admin/v2/persistent/reasons/ns/p/partitions", "", 204, ""},
		{"DELETE", ns, "", 204, ""},
		{"DELETE", "/admin/v2/tenants/reasons", "", 204, ""},
	} {
		req, err := http.NewRequest(tc.method, base+tc.path, strings.NewReader(tc.body))
		must(t, tc.path, err)
		if tc.body != "" {
			req.Header.Set("Content-Type", "application/json")
		}
		resp, err := http.DefaultClient.Do(req)
		must(t, tc.path, err)
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != tc.want {
			t.Errorf("%s %s: %d %s, want %d", tc.method, tc.path, resp.StatusCode, b, tc.want)
			continue
		}
		if tc.reason == "" {
			continue
		}
		var body struct{ Reason, Detail string }
		if err := json.Unmarshal(b, &body); err != nil || body.Reason != tc.reason {
			t.Errorf("%s %s: reason %q (%s), want %q", tc.method, tc.path, body.Reason, b, tc.reason)
		}
		if tc.want == 404 && !strings.Contains(body.Reason+body.Detail, "nosuch") {
			t.Errorf("%s %s: 404 body does not name what is missing: %s", tc.method, tc.path, b)
		}
	}
}

// TestPulsarReasonsThroughPulsarAdmin: the official Go admin client sees Pulsar's reasons
// (its own namespace tests compare them: TestSetTopicAutoCreation,
// TestNamespaces_SetSchemaCompatibilityStrategy).
func TestPulsarReasonsThroughPulsarAdmin(t *testing.T) {
	admin := adminClient(t)
	for ns, want := range map[string]string{"public/nonexist": "Namespace does not exist", "non-exist/default": "Tenant does not exist"} {
		name, err := utils.GetNamespaceName(ns)
		must(t, ns, err)
		for what, err := range map[string]error{
			"SetTopicAutoCreation":           admin.Namespaces().SetTopicAutoCreation(*name, utils.TopicAutoCreationConfig{Allow: true, Type: utils.NonPartitioned}),
			"SetSchemaCompatibilityStrategy": admin.Namespaces().SetSchemaCompatibilityStrategy(*name, utils.SchemaCompatibilityStrategyFull),
		} {
			var re rest.Error
			if !errors.As(err, &re) || re.Code != 404 || re.Reason != want {
				t.Errorf("%s on %s: %v, want 404 %q", what, ns, err, want)
			}
		}
	}
}
