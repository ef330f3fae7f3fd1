//go:build !linux

package vfs

import "os"

func fdatasync(f *os.File) error { return f.Sync() }

func writeback(f *os.File, end int64) error { return nil }

func preallocate(f *os.File, off, size int64) error { return nil }

func usage(dir string) (float64, error) { return 0, nil }
