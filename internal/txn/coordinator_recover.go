package txn

import (
	"context"
	"fmt"
	"time"
)

// recover rebuilds the coordinator's state from its log: every record not acknowledged,
// oldest first. A transaction's records are acknowledged together once it ended, but the
// cursor may persist only some of those acknowledgements (recordLog), so a record whose
// transaction has no first record left belongs to an ended one and is acknowledged again.
// existed tells that the log was there before this open.
func (c *Coordinator) recover(ctx context.Context, existed bool) error {
	var orphans []recPos
	err := c.log.replay(ctx, func(p recPos, data []byte) error {
		r, err := decodeRecord(data)
		if err != nil {
			return err
		}
		m := c.txns[r.least]
		switch r.kind {
		case recNew:
			if m != nil {
				return fmt.Errorf("%w: transaction %d opened twice", ErrCorrupt, r.least)
			}
			c.txns[r.least] = &txnMeta{
				least: r.least, status: Open, opened: r.opened, timeoutAt: r.opened.Add(r.timeout),
				owner: r.owner, records: []recPos{p}, heapIdx: -1,
			}
			c.seq = max(c.seq, r.least)
			return nil
		case recPartitions, recSubscriptions:
			if m == nil {
				orphans = append(orphans, p)
				return nil
			}
			if m.status != Open {
				return fmt.Errorf("%w: transaction %d gained participants while %s", ErrCorrupt, r.least, m.status)
			}
			m.parts = append(m.parts, r.partitions...)
			m.subs = append(m.subs, r.subs...)
		case recStatus:
			if m == nil {
				orphans = append(orphans, p)
				return nil
			}
			ok := (m.status == Open && (r.status == Committing || r.status == Aborting)) ||
				(m.status == Committing && r.status == Committed) || (m.status == Aborting && r.status == Aborted)
			if !ok {
				return fmt.Errorf("%w: transaction %d went from %s to %s", ErrCorrupt, r.least, m.status, r.status)
			}
			m.status, m.timedOut = r.status, m.timedOut || r.timedOut
		}
		m.records = append(m.records, p)
		return nil
	})
	if err != nil {
		return err
	}
	if s, ok := c.log.props()[seqProp]; ok && uint64(s) > c.seq {
		c.seq = uint64(s)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	// Sequences up to newAhead past the highest durable one may have been answered by a
	// previous owner's New before it stopped: never hand them out again.
	if existed {
		c.seq += newAhead
	}
	c.durSeq, c.propSeq = c.seq, uint64(c.log.props()[seqProp])
	var ended []recPos
	now := c.now()
	var expired []uint64
	for least, m := range c.txns {
		switch m.status {
		case Open:
			if !m.timeoutAt.After(now) {
				expired = append(expired, least)
				continue
			}
			c.scheduleLocked(m)
		case Committing, Aborting:
			m.done = make(chan struct{})
			action := Commit
			if m.status == Aborting {
				action = Abort
			}
			c.startDriveLocked(m, action)
		case Committed, Aborted:
			ended = append(ended, m.records...)
			delete(c.txns, least)
		}
	}
	c.dropLocked(append(ended, orphans...))
	if len(expired) > 0 {
		// Aborted after the lock is released (startEnd takes appendMu first).
		go func() {
			for _, least := range expired {
				if _, err := c.startEnd(ID{c.id, least}, Abort, true); err != nil && c.Err() == nil {
					c.lg.Warn("aborting a transaction that timed out while no coordinator served it failed", "txn", ID{c.id, least}, "err", err)
				}
			}
		}()
	}
	c.lg.Info("coordinator recovered", "open", len(c.txns), "sequence", c.seq, "took", c.now().Sub(c.stats.recoverStart).Round(time.Millisecond))
	return nil
}
