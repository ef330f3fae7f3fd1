// Package e2e holds end-to-end tests over real magnetar processes on loopback, driven by the
// official Pulsar Go client. TestMain builds the binary once; each test starts the processes
// it needs with fresh data directories and free ports and stops (or SIGKILLs) them itself.
package e2e
