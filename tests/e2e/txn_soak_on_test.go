//go:build soak

package e2e

const txnCrashRounds = 120
