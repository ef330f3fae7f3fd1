//go:build race

package testbin

// Race reports whether this test binary was built with the race detector.
const Race = true
