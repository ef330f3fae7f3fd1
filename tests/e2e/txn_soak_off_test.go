//go:build !soak

package e2e

// txnCrashRounds is how many SIGKILLs TestTxnSIGKILLExactlyOnce deals; the soak build tag
// (make soak) raises it.
const txnCrashRounds = 1

// txnSoak runs the long transaction tests (the cluster SIGKILL test) only under make soak.
const txnSoak = false
