package wasm

import "crypto/rand"

// randReader gives the guest real randomness (WASI random_get).
type randReader struct{}

func (randReader) Read(p []byte) (int, error) { return rand.Read(p) }
