//go:build !linux

package perf

import "os"

func fdatasync(f *os.File) error { return f.Sync() }
