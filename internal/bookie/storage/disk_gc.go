package storage

import (
	"fmt"
	"math"
	"path/filepath"
	"time"

	"github.com/magnetar-io/magnetar/internal/bookie/storage/entrylog"
	"github.com/magnetar-io/magnetar/internal/bookie/storage/index"
)

// gcLoop runs garbage collection every gcWaitTime: logs without live entries are removed
// every time; logs under the minor/major compaction threshold are compacted when their
// interval has passed.
func (d *Disk) gcLoop() {
	defer d.wg.Done()
	ticker := time.NewTicker(d.cfg.GCWaitTime)
	defer ticker.Stop()
	lastMinor, lastMajor := time.Now(), time.Now()
	for {
		select {
		case <-d.closeCh:
			return
		case <-ticker.C:
		}
		threshold := 0.0
		now := time.Now()
		switch {
		case d.cfg.MajorCompactionThreshold > 0 && now.Sub(lastMajor) >= d.cfg.MajorCompactionInterval:
			threshold, lastMajor, lastMinor = d.cfg.MajorCompactionThreshold, now, now
		case d.cfg.MinorCompactionThreshold > 0 && now.Sub(lastMinor) >= d.cfg.MinorCompactionInterval:
			threshold, lastMinor = d.cfg.MinorCompactionThreshold, now
		}
		if _, _, err := d.collectGarbage(threshold); err != nil {
			d.log.Warn("garbage collection failed; will retry at the next run", "err", err)
		}
	}
}

// collectGarbage removes entry logs with no live bytes and compacts those whose live
// fraction is under threshold (0: remove only). It returns how many logs it removed and
// compacted.
func (d *Disk) collectGarbage(threshold float64) (removed, compacted int, err error) {
	if d.health.readOnly.Load() {
		return 0, 0, nil // compaction writes; leave the disk alone until it is healthy
	}
	d.flushMu.Lock()
	defer d.flushMu.Unlock()
	for id, m := range d.logMeta {
		if d.curLog != nil && id == d.curLog.ID {
			continue
		}
		var total, live int64
		for l, n := range m {
			total += n
			if !d.isDeleted(l) {
				live += n
			}
		}
		switch {
		case live == 0:
			if err := d.removeLog(id); err != nil {
				return removed, compacted, err
			}
			removed++
		case threshold > 0 && float64(live) < threshold*float64(total) && !d.noCompact[id]:
			if err := d.compactLog(id); err != nil {
				return removed, compacted, err
			}
			compacted++
		}
	}
	return removed, compacted, nil
}

// removeLog forgets a log in the index, then deletes the file once no reader uses it.
// Caller holds flushMu.
func (d *Disk) removeLog(id uint64) error {
	d.indexMu.Lock()
	b := d.ix.NewBatch()
	b.DeleteLog(id)
	err := b.Commit()
	d.indexMu.Unlock()
	if err != nil {
		return err
	}
	delete(d.logMeta, id)
	delete(d.dirtyLogs, id)
	d.logsMu.Lock() // waits for readers holding a location in this log
	lg := d.logs[id]
	delete(d.logs, id)
	d.logsMu.Unlock()
	if lg != nil {
		_ = lg.Close()
	}
	if err := d.fs.Remove(filepath.Join(d.ldir, entrylog.FileName(id))); err != nil {
		return fmt.Errorf("storage: remove entry log %d: %w", id, err)
	}
	d.m.logsRemoved.Inc()
	d.log.Info("entry log removed", "log", id)
	return nil
}

// compactLog copies the live records of a log into the current log, repoints the index
// at the copies in one batch, and removes the old log. Caller holds flushMu, so no flush
// writes the index meanwhile.
func (d *Disk) compactLog(id uint64) error {
	d.logsMu.RLock()
	old := d.logs[id]
	d.logsMu.RUnlock()
	if old == nil {
		return fmt.Errorf("storage: compact: entry log %d is missing", id)
	}
	type moved struct {
		ledger, entry int64
		loc           index.Location
	}
	var ms []moved
	var copied int64
	err := old.Scan(func(rec entrylog.Record, off int64, size int) error {
		if d.isDeleted(rec.LedgerID) {
			return nil
		}
		cur, ok, err := d.ix.Get(rec.LedgerID, rec.EntryID)
		if err != nil {
			return err
		}
		if !ok || cur.Log != id || int64(cur.Offset) != off {
			return nil // superseded by a later write of the same entry
		}
		loc, err := d.appendToLog(rec.LedgerID, rec.EntryID, rec.Payload)
		if err != nil {
			return err
		}
		ms = append(ms, moved{rec.LedgerID, rec.EntryID, loc})
		copied += int64(size)
		return nil
	})
	if err != nil {
		return fmt.Errorf("storage: compact log %d: %w", id, err)
	}
	if err := d.syncLog(); err != nil {
		return err
	}
	d.indexMu.Lock()
	b := d.ix.NewBatch()
	for _, m := range ms {
		if !d.isDeleted(m.ledger) {
			b.PutLocation(m.ledger, m.entry, m.loc)
		}
	}
	for lid := range d.dirtyLogs {
		if m, ok := d.logMeta[lid]; ok {
			b.PutLog(lid, m)
		}
	}
	err = b.Commit()
	d.indexMu.Unlock()
	if err != nil {
		return err
	}
	clear(d.dirtyLogs)
	d.m.compactedBytes.Add(float64(copied))
	// Scan stops at a record it cannot decode. Before deleting the old log, make sure no
	// live location still points into it (a damaged record in the middle would otherwise
	// turn the live entries after it into lost ones).
	for l := range d.logMeta[id] {
		if d.isDeleted(l) {
			continue
		}
		var left int64 = -1
		if err := d.ix.Range(l, 0, math.MaxInt64-1, func(e int64, loc index.Location) bool {
			if loc.Log == id {
				left = e
				return false
			}
			return true
		}); err != nil {
			return err
		}
		if left >= 0 {
			d.noCompact[id] = true // do not copy its head again at every run
			d.log.Error("compaction could not move every live entry; keeping the old entry log",
				"log", id, "ledger", l, "entry", left)
			return fmt.Errorf("storage: compact log %d: entry (%d,%d) still lives there", id, l, left)
		}
	}
	d.log.Info("entry log compacted", "log", id, "live_records", len(ms), "live_bytes", copied)
	return d.removeLog(id)
}
