//go:build !soak

package managedledger

// soakRounds is how many crash/reopen rounds the randomized recovery test runs; the soak
// build tag (go test -tags soak) raises it.
const soakRounds = 6
