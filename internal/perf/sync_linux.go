package perf

import (
	"os"
	"syscall"
)

// fdatasync flushes data without the metadata fsync also writes, as the journal does.
func fdatasync(f *os.File) error { return syscall.Fdatasync(int(f.Fd())) }
