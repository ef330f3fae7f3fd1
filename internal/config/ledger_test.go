package config

import (
	"errors"
	"strings"
	"testing"
)

func TestLedgerClientConfigValidate(t *testing.T) {
	c := DefaultLedgerClientConfig()
	if err := c.Validate(); err != nil {
		t.Fatalf("defaults invalid: %v", err)
	}
	c.MaxAddsInProgress = 0
	c.EnsemblePlacementPolicy = "nearest"
	err := c.Validate()
	var fe *FieldError
	if !errors.As(err, &fe) || !strings.Contains(err.Error(), "maxAddsInProgressLimit") || !strings.Contains(err.Error(), "ensemblePlacementPolicy") {
		t.Fatalf("want both keys named, got %v", err)
	}
	if _, err := Bind(nil, &c); err != nil {
		t.Fatalf("every field must be bindable: %v", err)
	}
}
