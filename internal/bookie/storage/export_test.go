package storage

// Test hooks for the external test package (storage_test), which needs them because the
// conformance suite imports this package.

// FlushNow flushes the write cache.
func (d *Disk) FlushNow() error { return d.flush() }

// FlushIndexAsync starts a flush of the Pebble index's memtable (its background work).
func (d *Disk) FlushIndexAsync() error { return d.ix.FlushAsync() }

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

// CloseWithoutFlush stops the storage the way a crash would leave its files as far as the
// write cache goes: the journal is closed (what was acknowledged is on disk) but the write
// cache is not flushed, so reopening must replay the journal.
func (d *Disk) CloseWithoutFlush() {
	d.closed.Store(true)
	_ = d.jw.Close()
	close(d.closeCh)
	d.wg.Wait()
	d.cache.close()
	d.logsMu.Lock()
	for _, lg := range d.logs {
		_ = lg.Close()
	}
	_ = d.ix.Close()
	d.logsMu.Unlock()
}

// StallFlusher blocks flushes until the returned function is called.
func (d *Disk) StallFlusher() (release func()) {
	d.flushMu.Lock()
	return d.flushMu.Unlock
}

// WriteCacheBytes is the write cache's memory in use.
func (d *Disk) WriteCacheBytes() int64 {
	d.cache.mu.Lock()
	defer d.cache.mu.Unlock()
	return d.cache.used
}
