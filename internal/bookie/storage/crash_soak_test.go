//go:build soak

package storage_test

const crashIterations = 100
