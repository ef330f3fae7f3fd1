//go:build !soak

package e2e

// txnCrashRounds is how many SIGKILLs TestTxnSIGKILLExactlyOnce deals; the soak build tag
// (make soak) raises it.
const txnCrashRounds = 1
