package vfs

import (
	"errors"
	"os"
	"syscall"
)

func fdatasync(f *os.File) error { return syscall.Fdatasync(int(f.Fd())) }

// sync_file_range flags (linux/fs.h).
const (
	syncFileRangeWaitBefore = 1
	syncFileRangeWrite      = 2
)

// writeback waits for writeback already running on [0, end) and starts it for the rest of
// that range's dirty pages, without waiting for it or for a device cache flush.
func writeback(f *os.File, end int64) error {
	_, _, e := syscall.Syscall6(syscall.SYS_SYNC_FILE_RANGE, f.Fd(), 0, uintptr(end),
		syncFileRangeWaitBefore|syncFileRangeWrite, 0, 0)
	if e != 0 {
		if e == syscall.ENOSYS || e == syscall.EINVAL || e == syscall.ESPIPE {
			return nil // not supported here: the final fdatasync does all the work
		}
		return e
	}
	return nil
}

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
