package vfs

import (
	"errors"
	"os"
	"syscall"
)

func fdatasync(f *os.File) error { return syscall.Fdatasync(int(f.Fd())) }

func preallocate(f *os.File, off, size int64) error {
	err := syscall.Fallocate(int(f.Fd()), 0, off, size)
	if errors.Is(err, syscall.EOPNOTSUPP) || errors.Is(err, syscall.ENOSYS) {
		return nil // tmpfs and some others: appends then grow the file, still correct
	}
	return err
}

func usage(dir string) (float64, error) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return 0, err
	}
	if st.Blocks == 0 {
		return 0, nil
	}
	return 1 - float64(st.Bavail)/float64(st.Blocks), nil
}
