//go:build soak

package managedledger

const soakRounds = 300
