package storage

// Test hooks for the external test package (storage_test), which needs them because the
// conformance suite imports this package.

// FlushNow flushes the write cache.
func (d *Disk) FlushNow() error { return d.flush() }

// CollectGarbageNow runs one garbage collection with the given compaction threshold.
func (d *Disk) CollectGarbageNow(threshold float64) (removed, compacted int, err error) {
	return d.collectGarbage(threshold)
}

// CheckHealthNow runs one disk check.
func (d *Disk) CheckHealthNow() { d.health.check() }

// EntryLogIDs lists the open entry logs.
func (d *Disk) EntryLogIDs() []uint64 {
	d.logsMu.RLock()
	defer d.logsMu.RUnlock()
	var ids []uint64
	for id := range d.logs {
		ids = append(ids, id)
	}
	return ids
}
