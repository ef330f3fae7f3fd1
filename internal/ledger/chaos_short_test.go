//go:build !soak

package ledger

// defaultChaosRounds keeps the normal run short; `-tags soak` runs many more.
const defaultChaosRounds = 12
