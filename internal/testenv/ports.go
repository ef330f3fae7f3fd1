package testenv

import (
	"net"
	"testing"
)

// FreePort returns a loopback TCP port that was free a moment ago. A program started on it
// may still lose a race with another process; the helpers that use it retry start-up.
func FreePort(tb testing.TB) int {
	tb.Helper()
	p, err := freePort()
	if err != nil {
		tb.Fatalf("testenv: no free port: %v", err)
	}
	return p
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
