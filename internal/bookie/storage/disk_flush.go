package storage

import (
	"cmp"
	"fmt"
	"path/filepath"
	"slices"
	"time"

	"github.com/magnetar-io/magnetar/internal/bookie/storage/entrylog"
	"github.com/magnetar-io/magnetar/internal/bookie/storage/index"
	"github.com/magnetar-io/magnetar/internal/bookie/storage/journal"
)

// flushLoop flushes the write cache every FlushInterval and whenever the active half is
// half the cache. After a failure it waits for the next tick or for the disk checker's
// retry signal instead of spinning on kicks.
func (d *Disk) flushLoop() {
	defer d.wg.Done()
	ticker := time.NewTicker(d.cfg.FlushInterval)
	defer ticker.Stop()
	failing := false
	for {
		kick := d.flushKick
		if failing {
			kick = nil
		}
		select {
		case <-d.closeCh:
			return
		case <-ticker.C:
		case <-kick:
		case <-d.retryCh:
		}
		err := d.flush()
		if err != nil && !failing {
			d.log.Error("write-cache flush failed; the bookie is read-only until the disk checker sees it healthy", "err", err)
			d.health.writeFailed(err)
		}
		failing = err != nil
	}
}

// flush writes one generation: swap the active half out (or retry the one a failed flush
// left), write its entries sorted by (ledger, entry) to the entry log, fsync, commit
// locations + ledger metadata + log metadata + checkpoint in one synced index batch, then
// free the memory and delete journal files the checkpoint covers.
func (d *Disk) flush() error {
	d.flushMu.Lock()
	defer d.flushMu.Unlock()
	c := &d.cache
	c.mu.Lock()
	if c.flushing == nil {
		g := c.active
		d.lmu.Lock()
		var meta map[int64]index.LedgerMeta
		for id, st := range d.dirty {
			if !st.deleted {
				if meta == nil {
					meta = make(map[int64]index.LedgerMeta, len(d.dirty))
				}
				meta[id] = st.meta()
			}
		}
		clear(d.dirty)
		d.lmu.Unlock()
		if len(g.entries) == 0 && meta == nil && (!g.hasCkpt || g.ckpt == d.lastCkpt) && len(d.dirtyLogs) == 0 {
			c.mu.Unlock()
			return nil
		}
		g.meta = meta
		c.active = newGen(g.ckpt)
		c.active.hasCkpt = g.hasCkpt
		c.flushing = g
	}
	g := c.flushing
	c.mu.Unlock()

	start := time.Now()
	flushed, err := d.writeGen(g)
	if err != nil {
		return err
	}
	d.m.flushLatency.Observe(time.Since(start).Seconds())
	d.m.flushBytes.Add(float64(flushed))
	// Entries just written may be newer versions of ones the read cache holds.
	d.rcache.invalidate(g.entries)

	c.mu.Lock()
	c.flushing = nil
	c.release(g)
	c.mu.Unlock()

	if g.hasCkpt && !g.noCheckpoint {
		d.lastCkpt = g.ckpt
		if err := journal.RemoveBefore(d.fs, d.jdir, g.ckpt.File); err != nil {
			d.log.Warn("could not delete journal files before the checkpoint; will retry at the next flush", "err", err)
		}
	}
	return nil
}

// writeGen writes a generation to the entry log and the index. Caller holds flushMu.
func (d *Disk) writeGen(g *cacheGen) (int64, error) {
	keys := make([]entryKey, 0, len(g.entries))
	for k := range g.entries {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b entryKey) int {
		if c := cmp.Compare(a.ledger, b.ledger); c != 0 {
			return c
		}
		return cmp.Compare(a.entry, b.entry)
	})
	type placed struct {
		k   entryKey
		loc index.Location
	}
	locs := make([]placed, 0, len(keys))
	var flushed int64
	lastLedger, lastDeleted := int64(-1), false
	for _, k := range keys {
		if k.ledger != lastLedger {
			lastLedger, lastDeleted = k.ledger, d.isDeleted(k.ledger)
		}
		if lastDeleted {
			continue
		}
		p := g.entries[k]
		loc, err := d.appendToLog(k.ledger, k.entry, p)
		if err != nil {
			return 0, err
		}
		locs = append(locs, placed{k, loc})
		flushed += int64(len(p))
	}
	if err := d.syncLog(); err != nil {
		return 0, err
	}

	if err := d.health.indexWritable(); err != nil {
		return 0, err
	}
	d.indexMu.Lock()
	defer d.indexMu.Unlock()
	b := d.ix.NewBatch()
	lastLedger = -1
	for _, pl := range locs {
		// Re-check under indexMu: DeleteLedger marks the ledger before taking indexMu,
		// so a location written here can never outlive the deletion's range delete.
		if pl.k.ledger != lastLedger {
			lastLedger, lastDeleted = pl.k.ledger, d.isDeleted(pl.k.ledger)
		}
		if !lastDeleted {
			b.PutLocation(pl.k.ledger, pl.k.entry, pl.loc)
		}
	}
	for id, m := range g.meta {
		if !d.isDeleted(id) {
			b.PutLedger(id, m)
		}
	}
	for id := range d.dirtyLogs {
		if m, ok := d.logMeta[id]; ok {
			b.PutLog(id, m)
		}
	}
	if g.hasCkpt && !g.noCheckpoint {
		b.PutCheckpoint(index.Checkpoint{File: g.ckpt.File, Offset: g.ckpt.Offset})
	}
	if err := b.Commit(); err != nil {
		return 0, err
	}
	clear(d.dirtyLogs)
	return flushed, nil
}

func (d *Disk) isDeleted(ledgerID int64) bool {
	d.lmu.RLock()
	defer d.lmu.RUnlock()
	st := d.ledgers[ledgerID]
	return st != nil && st.deleted
}

// appendToLog appends one record to the current entry log, rolling to a new log past
// logSizeLimit or after a failed write. Caller holds flushMu.
func (d *Disk) appendToLog(ledgerID, entryID int64, p []byte) (index.Location, error) {
	n := int64(entrylog.RecordHeaderSize + len(p))
	if d.logBroken || (d.curLog.Size()+n > d.cfg.EntryLogSizeLimit && d.curLog.Size() > entrylog.HeaderSize) {
		if err := d.rollLog(); err != nil {
			return index.Location{}, err
		}
	}
	off, size, err := d.curLog.Append(ledgerID, entryID, p)
	if err != nil {
		d.logBroken = true
		return index.Location{}, err
	}
	m := d.logMeta[d.curLog.ID]
	m[ledgerID] += int64(size)
	d.dirtyLogs[d.curLog.ID] = true
	return index.Location{Log: d.curLog.ID, Offset: uint32(off), Size: uint32(size)}, nil
}

func (d *Disk) syncLog() error {
	if err := d.curLog.Sync(); err != nil {
		d.logBroken = true
		return err
	}
	return nil
}

// rollLog syncs the current entry log (if healthy) and starts the next one. Caller holds
// flushMu (or is Open).
func (d *Disk) rollLog() error {
	if d.curLog != nil && !d.logBroken {
		if err := d.curLog.Sync(); err != nil {
			d.logBroken = true
			return err
		}
	}
	id := d.nextLogID
	lg, err := entrylog.Create(d.fs, d.ldir, id)
	if err != nil {
		return err
	}
	lg.Writeback.Step = d.cfg.FlushEntryLogBytes
	if err := d.fs.SyncDir(d.ldir); err != nil {
		_ = lg.Close()
		_ = d.fs.Remove(filepath.Join(d.ldir, entrylog.FileName(id)))
		return fmt.Errorf("storage: sync %s: %w", d.ldir, err)
	}
	d.nextLogID++
	d.logsMu.Lock()
	d.logs[id] = lg
	d.logsMu.Unlock()
	d.logMeta[id] = map[int64]int64{}
	d.dirtyLogs[id] = true
	d.curLog, d.logBroken = lg, false
	return nil
}
