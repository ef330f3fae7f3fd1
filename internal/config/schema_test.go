package config

import (
	"errors"
	"testing"
)

func TestSchemaConfigValidate(t *testing.T) {
	c := DefaultSchemaConfig()
	if err := c.Validate(); err != nil {
		t.Fatalf("defaults: %v", err)
	}
	if c.CompatibilityStrategy != "FULL" || !c.AllowAutoUpdateSchema || c.ValidationEnforced {
		t.Fatalf("defaults differ from Pulsar's: %+v", c)
	}
	c.CompatibilityStrategy = "SOMETIMES"
	c.MaxSchemaSizeBytes = 0
	err := c.Validate()
	var fe *FieldError
	if !errors.As(err, &fe) || fe.Key != "schemaCompatibilityStrategy" {
		t.Fatalf("bad strategy: %v", err)
	}
	b := DefaultBrokerConfig()
	b.Schema.MaxSchemaSizeBytes = 2 << 20
	if err := b.Validate(); err == nil {
		t.Fatal("broker config accepted a schema size above 1 MiB")
	}
}
