// Package brokerd composes a broker process: the ledger client, managed ledgers, the broker
// and its admin HTTP server (services.go, shared with standalone), and for `magnetar broker`
// the cluster parts around them: an external metadata store, bundle ownership, registration
// and graceful release of bundles on shutdown (brokerd.go).
package brokerd
