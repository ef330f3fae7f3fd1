package config

import (
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

func TestPoliciesConfigBindingAndValidation(t *testing.T) {
	c := DefaultBrokerConfig()
	fs := pflag.NewFlagSet("broker", pflag.ContinueOnError)
	b, err := Bind(fs, &c)
	if err != nil {
		t.Fatal(err)
	}
	if err := fs.Parse([]string{"--broker-deduplication-enabled", "--broker-deduplication-entries-interval", "10"}); err != nil {
		t.Fatal(err)
	}
	if err := Load("", []string{"MAGNETAR_TTL_DURATION_DEFAULT_IN_SECONDS=60"}, b); err != nil {
		t.Fatal(err)
	}
	p := c.Policies
	if !p.BrokerDeduplicationEnabled || p.BrokerDeduplicationEntriesInterval != 10 || p.TTLDurationDefaultInSeconds != 60 {
		t.Fatalf("loaded %+v", p)
	}
	p.BrokerDeduplicationMaxNumberOfProducers = 0
	p.BacklogQuotaDefaultRetentionPolicy = "drop_everything"
	err = p.Validate()
	if err == nil {
		t.Fatal("bad policies config validated")
	}
	for _, key := range []string{"brokerDeduplicationMaxNumberOfProducers", "backlogQuotaDefaultRetentionPolicy"} {
		if !strings.Contains(err.Error(), key) {
			t.Fatalf("error %q does not name %s", err, key)
		}
	}
}
