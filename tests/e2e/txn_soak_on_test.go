//go:build soak

package e2e

const txnCrashRounds = 120

const txnSoak = true
