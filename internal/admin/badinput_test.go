package admin_test

import (
	"io"
	"net/http"
	"strings"
	"testing"
)

// TestRESTInputRules checks issue #8's input rules on the real standalone, in order (later
// rows rely on earlier ones): invalid JSON is 400, unknown tenant/namespace/topic 404, a
// wrong method 405, a conflict 409, a refused state change 412, each with a {"reason"};
// null bodies, unknown JSON fields, "//" in paths and ?authoritative are accepted.
func TestRESTInputRules(t *testing.T) {
	base := "http://" + sa.HTTPAddr()
	const topic = "/admin/v2/persistent/rules/ns/t"
	for _, tc := range []struct {
		method, path, body string
		want               int
	}{
		// null bodies and unknown fields
		{"PUT", "/admin/v2/tenants/rules", "null", 204},
		{"POST", "/admin/v2/tenants/rules", `{"allowedClusters":["standalone"],"adminRoles":[],"futureField":{"x":1}}`, 204},
		{"PUT", "/admin/v2/namespaces/rules/ns", "null", 204},
		{"PUT", topic, "null", 204},
		{"POST", "/admin/v2/namespaces/rules/ns/retention", `{"retentionTimeInMinutes":5,"retentionSizeInMB":1,"extra":true}`, 204},
		{"POST", "/admin/v2/namespaces/rules/ns/permissions/nobody", "null", 204},
		{"POST", topic + "/permissions/nobody", "null", 204},
		// invalid JSON
		{"PUT", "/admin/v2/tenants/rules2", `{"adminRoles":`, 400},
		{"POST", "/admin/v2/namespaces/rules/ns/retention", `{"retentionTimeInMinutes":"soon"}`, 400},
		{"POST", "/admin/v2/namespaces/rules/ns/messageTTL", `"60s"`, 400},
		{"POST", "/admin/v2/namespaces/rules/ns/persistence", `[`, 400},
		{"POST", "/admin/v2/namespaces/rules/ns/backlogQuota", `{"limitSize":`, 400},
		{"POST", topic + "/permissions/r", `["produce",`, 400},
		{"POST", topic + "/permissions/r", `["teleport"]`, 400},
		{"POST", topic + "/messageTTL", `true`, 400},
		{"PUT", topic + "/subscription/s", `{"ledgerId":"x"}`, 400},
		// unknown tenant, namespace, topic, subscription, cluster
		{"PUT", "/admin/v2/tenants/rules-x", `{"allowedClusters":["nosuch"]}`, 412},
		{"POST", "/admin/v2/tenants/rules", `{"allowedClusters":["standalone","nosuch"]}`, 412},
		{"POST", "/admin/v2/tenants/nosuch", `{"allowedClusters":["standalone"]}`, 404},
		{"DELETE", "/admin/v2/tenants/nosuch", "", 404},
		{"DELETE", "/admin/v2/namespaces/rules/nosuch", "", 404},
		{"GET", "/admin/v2/tenants/nosuch", "", 404},
		{"GET", "/admin/v2/namespaces/nosuch", "", 404},
		{"GET", "/admin/v2/namespaces/rules/nosuch", "", 404},
		{"POST", "/admin/v2/namespaces/nosuch/ns/messageTTL", "10", 404},
		{"GET", "/admin/v2/namespaces/rules/nosuch/bundles", "", 404},
		{"GET", "/admin/v2/persistent/nosuch/ns/t/permissions", "", 404},
		{"GET", "/admin/v2/persistent/rules/ns/nosuch/stats", "", 404},
		{"DELETE", topic + "/subscription/nosuch", "", 404},
		{"PUT", "/admin/v2/persistent/rules/ns/nosuch/unload", "", 404},
		{"PUT", topic + "/unload", "", 204},
		{"PUT", "/admin/v2/persistent/rules/ns/p/partitions", "2", 204},
		{"PUT", "/admin/v2/persistent/rules/ns/p-partition-1/unload", "", 204},
		{"PUT", "/admin/v2/persistent/rules/ns/p/unload", "", 204},
		{"DELETE", "/admin/v2/persistent/rules/ns/p/partitions", "", 204},
		{"GET", "/lookup/v2/topic/persistent/nosuch/ns/t", "", 404},
		{"GET", "/lookup/v2/topic/persistent/rules/nosuch/t/bundle", "", 404},
		{"GET", "/lookup/v2/topic/weird/rules/ns/t/bundle", "", 400},
		{"GET", "/admin/v2/nosuch/endpoint", "", 404},
		// wrong method
		{"DELETE", "/admin/v2/clusters", "", 405},
		{"PATCH", "/admin/v2/tenants/rules", "", 405},
		{"POST", topic + "/stats", "", 405},
		// conflicts and refused changes
		{"PUT", "/admin/v2/tenants/rules", "{}", 409},
		{"PUT", "/admin/v2/namespaces/rules/ns", "", 409},
		{"PUT", topic, "null", 409},
		{"PUT", topic + "/partitions", "2", 409},
		{"DELETE", "/admin/v2/tenants/rules", "", 409},
		{"DELETE", topic + "/permissions/never-granted", "", 412},
		// "//" and trailing slashes, ?authoritative
		{"GET", "//admin/v2//namespaces//rules/", "", 200},
		{"GET", "/admin/v2/persistent/rules//ns/t/stats?authoritative=true", "", 200},
		{"GET", "/admin/v2/namespaces/rules/ns/retention?authoritative=false", "", 200},
		{"DELETE", topic + "?force=true&authoritative=true", "", 204},
		{"DELETE", "/admin/v2/namespaces/rules/ns", "", 204},
		{"DELETE", "/admin/v2/tenants/rules", "", 204},
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
			t.Errorf("%s %s %s: %d %s, want %d", tc.method, tc.path, tc.body, resp.StatusCode, b, tc.want)
			continue
		}
		if tc.want == 404 && !strings.Contains(string(b), "nosuch") {
			t.Errorf("%s %s: 404 reason does not name what is missing: %s", tc.method, tc.path, b)
		}
		if tc.want >= 400 && !strings.Contains(string(b), `"reason":"`) {
			t.Errorf("%s %s: %d without a reason: %s", tc.method, tc.path, resp.StatusCode, b)
		}
		if tc.want == 405 && resp.Header.Get("Allow") == "" {
			t.Errorf("%s %s: 405 without Allow", tc.method, tc.path)
		}
	}
}
