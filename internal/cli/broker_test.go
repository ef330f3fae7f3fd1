package cli

import (
	"strings"
	"testing"
)

func TestBrokerRoleBadConfigExit2(t *testing.T) {
	for _, c := range []struct {
		args []string
		key  string
	}{
		{[]string{"broker", "--metadata-store-url", "zk://h:2181"}, "metadataStoreUrl"},
		{[]string{"broker", "--metadata-url", "h:2379"}, "metadataStoreUrl"},
		{[]string{"broker", "--default-number-of-namespace-bundles", "0"}, "defaultNumberOfNamespaceBundles"},
		{[]string{"broker", "--metadata-store-session-timeout-millis", "10"}, "metadataStoreSessionTimeoutMillis"},
		{[]string{"dev-cluster", "--bookies", "1"}, "2 bookies"},
	} {
		code, _, errOut := run(t, nil, c.args...)
		if code != 2 || !strings.Contains(errOut, c.key) {
			t.Errorf("%v: exit %d, %q (want 2 naming %s)", c.args, code, errOut, c.key)
		}
	}
}
