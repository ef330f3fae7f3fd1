//go:build soak

package ledger

// defaultChaosRounds under the soak tag: go test -tags 'pebblegozstd soak' -run TestChaos.
const defaultChaosRounds = 500
