// Package vfs is the file-system seam of the bookie storage: the journal and the entry logs
// do all their I/O through FS, so tests can inject faults (disk full, failing fsync) with
// FaultFS without root or a special file system. Default is the operating system's.
//
// File.Sync is fdatasync where the platform has it: the journal preallocates its files, so
// appends do not change the file size and data sync is enough for durability.
package vfs
