package config

import (
	"cmp"
	"fmt"
)

// FieldError says which key has a bad value and what the bound is. Validate methods return
// these (joined with errors.Join) so an operator sees every bad field at once.
type FieldError struct {
	Key    string
	Value  any
	Reason string
	// Origin is where the value came from ("config file F line N", "environment NAME",
	// "flag --x"), filled in by Locate; empty for a default.
	Origin string
}

func (e *FieldError) Error() string {
	if e.Origin != "" {
		return fmt.Sprintf("%s: %s=%v: %s", e.Origin, e.Key, e.Value, e.Reason)
	}
	return fmt.Sprintf("config %s=%v: %s", e.Key, e.Value, e.Reason)
}

// Between checks lo <= v <= hi.
func Between[T cmp.Ordered](key string, v, lo, hi T) error {
	if v < lo || v > hi {
		return &FieldError{Key: key, Value: v, Reason: fmt.Sprintf("must be between %v and %v", lo, hi)}
	}
	return nil
}

// AtLeast checks v >= lo.
func AtLeast[T cmp.Ordered](key string, v, lo T) error {
	if v < lo {
		return &FieldError{Key: key, Value: v, Reason: fmt.Sprintf("must be at least %v", lo)}
	}
	return nil
}

// NotEmpty checks that a string is set.
func NotEmpty(key, v string) error {
	if v == "" {
		return &FieldError{Key: key, Value: `""`, Reason: "must be set"}
	}
	return nil
}

// OneOf checks that v is one of the allowed values.
func OneOf(key, v string, allowed ...string) error {
	for _, a := range allowed {
		if v == a {
			return nil
		}
	}
	return &FieldError{Key: key, Value: v, Reason: fmt.Sprintf("must be one of %v", allowed)}
}
