package config

import (
	"strings"
	"testing"
)

func TestKafkaSASLAllowedMechanisms(t *testing.T) {
	c := DefaultKafkaConfig()
	if err := c.Validate(); err != nil {
		t.Fatalf("defaults: %v", err)
	}
	for _, tc := range []struct {
		mechs []string
		want  string
	}{
		{[]string{"SCRAM-SHA-512"}, ""},
		{nil, "at least one"},
		{[]string{"PLAIN", "GSSAPI"}, "GSSAPI"},
		{[]string{"scram-sha-256"}, "unknown mechanism"}, // clients send Kafka's spelling
	} {
		c.SASLAllowedMechanisms = tc.mechs
		err := c.Validate()
		if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%q: %v, want an error containing %q", tc.mechs, err, tc.want)
		}
	}
}
