//go:build soak

package bookie

import "testing"

// TestSoakCrashLoop is the long crash loop: `go test -tags pebblegozstd,soak -run Soak ./internal/bookie`.
func TestSoakCrashLoop(t *testing.T) { crashLoop(t, 60) }
