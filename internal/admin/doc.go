// Package admin serves the HTTP side of a broker: Pulsar's admin REST API v2 under
// /admin/v2, Prometheus metrics on /metrics, and the /status.html health check load
// balancers poll.
//
// Errors leave through one table (errors.go:statusFor): every handler returns a Go error and
// writeError turns it into Pulsar's {"reason": "..."} body with the status code Pulsar uses
// (404 missing, 409 exists, 412 precondition, 400 bad input, 500 otherwise).
package admin
