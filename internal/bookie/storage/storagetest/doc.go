// Package storagetest is the conformance suite of storage.Storage: Run checks the rules
// every implementation (the disk storage and the memory twin) must keep: master keys,
// fencing, LAC and its long-poll, deletion, error kinds, callback order, close.
package storagetest
