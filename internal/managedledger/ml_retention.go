package managedledger

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/magnetar-io/magnetar/internal/metadata"
)

// Retention is the part of a managed ledger that lets data go: trimming the consumed
// ledgers retention no longer keeps (Trim, TrimBefore), backlog quotas (CheckBacklogQuota)
// and message TTL (ExpireMessages). It holds no state of its own: it works on its managed
// ledger's ledger list and cursors under their locks (see ManagedLedger's lock order).
type Retention struct{ ml *ManagedLedger }

// Retention is the managed ledger's retention (trim, backlog quota, message TTL).
func (ml *ManagedLedger) Retention() Retention { return Retention{ml} }

// slowestMarkDelete returns the oldest mark-delete position among durable cursors, or the
// last confirmed entry when there are none. Caller holds metaMu (so no cursor appears or
// moves back meanwhile) and not mu.
func (r Retention) slowestMarkDelete() (Position, bool) {
	ml := r.ml
	cursors := ml.Cursors()
	if len(cursors) == 0 {
		return ml.LastConfirmedEntry(), false
	}
	slowest := Latest
	for _, c := range cursors {
		slowest = minPos(slowest, c.MarkDeletePosition())
	}
	return slowest, true
}

// Trim deletes the ledgers that lie entirely before the slowest durable cursor's mark-delete
// position and that retention no longer keeps (see Config.RetentionTime). Ledgers are
// removed from the list (CAS) first and then deleted through the ledger client, so bookies
// reclaim their storage; a ledger is never deleted while listed. The current ledger is never
// deleted. The factory's background pass calls Trim; the broker may call it after acks.
func (r Retention) Trim(ctx context.Context) error {
	return r.trim(ctx, func(slowest Position, cfg Config, now time.Time, ledgers []ledgerInfo, remaining int64) int {
		n := 0
		for _, l := range ledgers {
			consumed := l.LedgerID < slowest.LedgerID || (l.LedgerID == slowest.LedgerID && slowest.EntryID >= l.Entries-1)
			if !consumed || !retentionExpired(cfg, l, remaining, now) {
				break
			}
			n++
			remaining -= l.Size
		}
		return n
	})
}

// TrimBefore deletes the ledgers that lie entirely before pos whatever retention and the
// cursors say (Kafka's DeleteRecords: the caller moves the cursors first). The current
// ledger is never deleted.
func (r Retention) TrimBefore(ctx context.Context, pos Position) error {
	return r.trim(ctx, func(_ Position, _ Config, _ time.Time, ledgers []ledgerInfo, _ int64) int {
		n := 0
		for n < len(ledgers) && ledgers[n].LedgerID < pos.LedgerID {
			n++
		}
		return n
	})
}

// trim removes the first pick(...) ledgers of the list but the current one, ledgers given
// oldest first, remaining the log's size.
func (r Retention) trim(ctx context.Context, pick func(slowest Position, cfg Config, now time.Time, ledgers []ledgerInfo, remaining int64) int) error {
	ml := r.ml
	ml.metaMu.Lock()
	defer ml.metaMu.Unlock()
	ml.mu.Lock()
	if err := ml.stateErrLocked(); err != nil {
		ml.mu.Unlock()
		return err
	}
	ml.mu.Unlock()
	ml.retryDeletes()
	slowest, _ := r.slowestMarkDelete()

	ml.mu.Lock()
	candidates := ml.ledgers[:max(len(ml.ledgers)-1, 0)]
	del := append([]ledgerInfo(nil), candidates[:pick(slowest, ml.cfg, ml.f.now(), candidates, ml.totalSize)]...)
	if len(del) == 0 {
		ml.mu.Unlock()
		return nil
	}
	list := append([]ledgerInfo(nil), ml.ledgers[len(del):]...)
	info := &mlInfo{Ledgers: list}
	if ml.terminated {
		info.Terminated = &ml.termPos
	}
	ver := ml.version
	ml.mu.Unlock()

	nv, err := ml.f.store.Put(ctx, ml.key, encodeMLInfo(info), ver)
	if err != nil {
		if errors.Is(err, metadata.ErrBadVersion) {
			ml.mu.Lock()
			ml.fenceLocked(err)
			ml.mu.Unlock()
			ml.add.drainCallbacks()
		}
		return fmt.Errorf("managedledger: %s: trimming ledger list: %w", ml.name, err)
	}
	ml.mu.Lock()
	ml.version = nv
	// Only the last ledger's counts change concurrently (adds); it is not trimmed, so drop
	// the head of the live list rather than installing the copy.
	ml.ledgers = append([]ledgerInfo(nil), ml.ledgers[len(del):]...)
	for _, l := range del {
		ml.numberOfEntries -= l.Entries
		ml.totalSize -= l.Size
		if r := ml.readers[l.LedgerID]; r != nil {
			_ = r.Close()
			delete(ml.readers, l.LedgerID)
		}
	}
	ml.mu.Unlock()
	for _, l := range del {
		ml.deleteLedgerQuietly(l.LedgerID)
	}
	ml.deleteOffloaded(del)
	ml.log.Debug("trimmed consumed ledgers", "count", len(del), "slowest", slowest.String())
	return nil
}

// retentionExpired reports whether retention lets a consumed ledger go. remaining is the
// size of the log before removing l.
func retentionExpired(cfg Config, l ledgerInfo, remaining int64, now time.Time) bool {
	rt, rs := cfg.RetentionTime, cfg.RetentionSizeBytes
	if rt == 0 && rs == 0 {
		return true
	}
	timeHit := rt > 0 && now.Sub(time.UnixMilli(l.Timestamp)) > rt
	sizeHit := rs > 0 && remaining > rs
	return timeHit || sizeHit
}

// BacklogQuotaResult is what CheckBacklogQuota found.
type BacklogQuotaResult struct {
	// SizeExceeded and TimeExceeded say which limit the slowest cursor is over (after any
	// eviction).
	SizeExceeded, TimeExceeded bool
	// BacklogBytes is the largest backlog of a durable cursor (estimated bytes).
	BacklogBytes int64
	// OldestBacklogAge is the age of the oldest unacknowledged ledger of any durable cursor,
	// taken from the close time of the ledger holding it (0 while it is in the current
	// ledger), as Pulsar does when preciseTimeBasedBacklogQuotaCheck is off.
	OldestBacklogAge time.Duration
	// Evicted counts entries skipped by consumer_backlog_eviction.
	Evicted int64
}

// Exceeded reports whether any limit is exceeded.
func (r BacklogQuotaResult) Exceeded() bool { return r.SizeExceeded || r.TimeExceeded }

// Err returns ErrBacklogQuotaExceeded (wrapped with details) when a limit is exceeded. The
// broker maps it per policy: producer_exception fails the producer, producer_request_hold
// holds it and checks again.
func (r BacklogQuotaResult) Err() error {
	if !r.Exceeded() {
		return nil
	}
	return fmt.Errorf("%w: backlog %d bytes, oldest %v", ErrBacklogQuotaExceeded, r.BacklogBytes, r.OldestBacklogAge)
}

// CheckBacklogQuota measures the durable cursors' backlog against q. With the
// consumer_backlog_eviction policy it first moves the offending cursors forward (dropping
// their oldest unacknowledged entries) until the quota holds; with the producer policies it
// only reports, and the broker acts on the result.
func (r Retention) CheckBacklogQuota(ctx context.Context, q BacklogQuota) (BacklogQuotaResult, error) {
	ml := r.ml
	res := r.measureBacklog(q)
	if !res.Exceeded() || q.Policy != ConsumerBacklogEviction {
		return res, nil
	}
	var evicted int64
	for _, c := range ml.Cursors() {
		if q.LimitBytes > 0 {
			n, sz := c.Backlog(), c.BacklogSize()
			if sz > q.LimitBytes && n > 0 {
				avg := max(sz/n, 1)
				skip := (sz - q.LimitBytes + avg - 1) / avg
				if err := c.Skip(skip); err != nil {
					return res, err
				}
				evicted += min(skip, n)
			}
		}
		if q.LimitTime > 0 {
			if target, ok := r.newestExpiredEntry(ml.f.now().Add(-q.LimitTime)); ok {
				before := c.Backlog()
				if err := c.MarkDelete(target); err != nil {
					return res, err
				}
				evicted += before - c.Backlog()
			}
		}
	}
	res = r.measureBacklog(q)
	res.Evicted = evicted
	if evicted > 0 {
		ml.log.Info("backlog quota exceeded: evicted the oldest backlog of slow cursors", "entries", evicted)
	}
	return res, nil
}

func (r Retention) measureBacklog(q BacklogQuota) BacklogQuotaResult {
	ml := r.ml
	var res BacklogQuotaResult
	now := ml.f.now()
	for _, c := range ml.Cursors() {
		res.BacklogBytes = max(res.BacklogBytes, c.BacklogSize())
		if c.Backlog() == 0 {
			continue
		}
		first := c.ml.next(c.MarkDeletePosition())
		ml.mu.Lock()
		if i := ml.indexLocked(first.LedgerID); i < len(ml.ledgers)-1 && ml.ledgers[i].LedgerID == first.LedgerID {
			res.OldestBacklogAge = max(res.OldestBacklogAge, now.Sub(time.UnixMilli(ml.ledgers[i].Timestamp)))
		}
		ml.mu.Unlock()
	}
	res.SizeExceeded = q.LimitBytes > 0 && res.BacklogBytes > q.LimitBytes
	res.TimeExceeded = q.LimitTime > 0 && res.OldestBacklogAge > q.LimitTime
	return res
}

// newestExpiredEntry returns the last entry of the newest closed ledger closed before
// cutoff.
func (r Retention) newestExpiredEntry(cutoff time.Time) (Position, bool) {
	ml := r.ml
	ml.mu.Lock()
	defer ml.mu.Unlock()
	var out Position
	found := false
	for _, l := range ml.ledgers[:max(len(ml.ledgers)-1, 0)] {
		if !time.UnixMilli(l.Timestamp).Before(cutoff) {
			break
		}
		if l.Entries > 0 {
			out, found = Position{l.LedgerID, l.Entries - 1}, true
		}
	}
	return out, found
}

// ExpireMessages applies a message TTL: every durable cursor acknowledges the entries
// published before now-ttl. With publishTime (the broker's metadata parser) the boundary is
// found by binary search over publish times; without it, whole ledgers closed before the
// cutoff expire. It returns how many entries were expired across cursors.
func (r Retention) ExpireMessages(ctx context.Context, ttl time.Duration, publishTime func([]byte) (time.Time, error)) (int64, error) {
	return r.expire(ctx, r.ml.Cursors(), ttl, publishTime)
}

// ExpireMessages applies a message TTL to this cursor only (pulsar-admin topics
// expire-messages for one subscription); see ManagedLedger.ExpireMessages.
func (c *Cursor) ExpireMessages(ctx context.Context, ttl time.Duration, publishTime func([]byte) (time.Time, error)) (int64, error) {
	return c.ml.Retention().expire(ctx, []*Cursor{c}, ttl, publishTime)
}

func (r Retention) expire(ctx context.Context, cursors []*Cursor, ttl time.Duration, publishTime func([]byte) (time.Time, error)) (int64, error) {
	ml := r.ml
	if ttl <= 0 || len(cursors) == 0 {
		return 0, nil
	}
	cutoff := ml.f.now().Add(-ttl)
	var target Position
	if publishTime != nil {
		first, err := ml.FindByPublishTime(ctx, cutoff, publishTime)
		if err != nil {
			return 0, err
		}
		target = r.prevStored(first)
	} else {
		var ok bool
		if target, ok = r.newestExpiredEntry(cutoff); !ok {
			return 0, nil
		}
	}
	var expired int64
	for _, c := range cursors {
		before := c.Backlog()
		if err := c.MarkDelete(target); err != nil {
			return expired, err
		}
		expired += before - c.Backlog()
	}
	return expired, nil
}

// prevStored is the position just before p for mark-delete purposes.
func (r Retention) prevStored(p Position) Position {
	ml := r.ml
	ml.mu.Lock()
	defer ml.mu.Unlock()
	if p.EntryID > 0 {
		return Position{p.LedgerID, p.EntryID - 1}
	}
	// First entry of a ledger: the last entry of an earlier ledger, or "nothing of p's ledger".
	return Position{p.LedgerID, -1}
}

// FindByPublishTime returns the first stored entry whose publish time (read by publishTime
// from the entry data) is at or after t, or the end position if there is none (Search: it
// assumes publish times grow with position; they do within a producer; across producers it
// finds a boundary, as Pulsar's reset-by-time does).
func (ml *ManagedLedger) FindByPublishTime(ctx context.Context, t time.Time, publishTime func([]byte) (time.Time, error)) (Position, error) {
	return ml.Search(ctx, func(data []byte) (bool, error) {
		pt, err := publishTime(data)
		return !pt.Before(t), err
	})
}

// Search returns the first stored entry for which match (given the entry data) is true, or
// the end position if it is true for none. match must be false for every entry before some
// position and true from there on (publish times, broker entry indexes); the search is a
// binary search over the stored entries and reads O(log n) of them.
func (ml *ManagedLedger) Search(ctx context.Context, match func(data []byte) (bool, error)) (Position, error) {
	ml.mu.Lock()
	start := ml.firstLocked()
	total := ml.countLocked(start, ml.lastConfirmedLocked())
	end := ml.endLocked()
	ml.mu.Unlock()
	lo, hi := int64(0), total
	for lo < hi {
		mid := lo + (hi-lo)/2
		ml.mu.Lock()
		p := ml.advanceLocked(start, mid+1)
		ml.mu.Unlock()
		es, err := ml.readPositions(ctx, []Position{p})
		if err != nil {
			return Position{}, err
		}
		if len(es) != 1 {
			return Position{}, fmt.Errorf("%w: %s: entry %v missing during search", ErrInvalidPosition, ml.name, p)
		}
		ok, err := match(es[0].Data)
		if err != nil {
			return Position{}, fmt.Errorf("managedledger: %s: searching at %v: %w", ml.name, p, err)
		}
		if ok {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	if lo == total {
		return end, nil
	}
	ml.mu.Lock()
	defer ml.mu.Unlock()
	return ml.advanceLocked(start, lo+1), nil
}
