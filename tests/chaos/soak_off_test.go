//go:build !soak

package chaos

const soakTag = false
