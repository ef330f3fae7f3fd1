//go:build soak

package chaos

// soakTag: -tags soak runs the long tier (make soak).
const soakTag = true
