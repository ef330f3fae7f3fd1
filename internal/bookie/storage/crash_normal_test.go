//go:build !soak

package storage_test

// crashIterations is small in the normal run; `make soak` (the soak tag) runs many.
const crashIterations = 3
