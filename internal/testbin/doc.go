// Package testbin builds the magnetar binary that process tests run. When the test binary
// itself is built with -race (as `make test` does), the magnetar binary is too, so the race
// detector also watches the real processes the end-to-end, chaos and crash tests start; a
// race found there makes the process exit with status 66 and its log names the race.
package testbin
