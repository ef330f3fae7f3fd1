package resources

import (
	"testing"

	"github.com/magnetar-io/magnetar/internal/config"
)

// config sits below resources, so the proxy's default broker prefix is a copy of
// BrokersPrefix: they must stay equal.
func TestProxyDefaultBrokerPrefix(t *testing.T) {
	if got := config.DefaultProxyConfig().BrokerRegistrationPrefix; got != BrokersPrefix {
		t.Fatalf("proxyBrokerRegistrationPrefix default %q, want resources.BrokersPrefix %q", got, BrokersPrefix)
	}
}

func TestParseBookieRegistration(t *testing.T) {
	for _, tc := range []struct {
		key, value, addr string
		ok               bool
	}{
		{BookieRegistrationKey("a:1"), `{"address":"b:2","state":"writable"}`, "b:2", true},
		{BookieRegistrationKey("a:1"), `{"state":"readonly"}`, "a:1", true},
		{BookieRegistrationKey(""), `{"state":"readonly"}`, "", false},
		{BookieRegistrationKey("a:1"), `{not json`, "", false},
	} {
		r, err := ParseBookieRegistration(tc.key, []byte(tc.value))
		if (err == nil) != tc.ok || r.Address != tc.addr {
			t.Errorf("%s %s: %+v, %v", tc.key, tc.value, r, err)
		}
	}
}
