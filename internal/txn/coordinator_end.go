package txn

import (
	"container/heap"
	"context"
	"errors"
	"sync"
	"time"

	"github.com/magnetar-io/magnetar/internal/wire"
)

// Ending a transaction: drive tells every participant, retrying each until it succeeds,
// then the transaction is forgotten and its final status logged; once that record is
// durable every record of the transaction is acknowledged in the log. A crash before the
// final record leaves the ending status as the last record: the next owner drives again.

const (
	retryFirst = 50 * time.Millisecond
	retryMax   = 5 * time.Second
)

// startDriveLocked starts ending m on its participants.
func (c *Coordinator) startDriveLocked(m *txnMeta, action Action) {
	parts, subs := append([]string(nil), m.parts...), append([]Subscription(nil), m.subs...)
	id := ID{c.id, m.least}
	low := c.lowWaterMarkLocked()
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		c.drive(id, action, parts, subs, low)
		c.mu.Lock()
		defer c.mu.Unlock()
		if c.usableLocked() != nil {
			return // Close answers the waiters; the next owner ends it again
		}
		c.finishLocked(m, action)
	}()
}

// drive calls every participant of id until each one succeeded or the coordinator stops.
func (c *Coordinator) drive(id ID, action Action, parts []string, subs []Subscription, low uint64) {
	if len(parts) == 1 && len(subs) == 0 {
		// The common case of a producer's transaction: no goroutine of its own.
		c.retry(id, "partition "+parts[0], func(ctx context.Context) error {
			return c.o.Participants.EndPartition(ctx, parts[0], id, action, low)
		})
		return
	}
	var wg sync.WaitGroup
	call := func(what string, f func(ctx context.Context) error) {
		defer wg.Done()
		c.retry(id, what, f)
	}
	for _, p := range parts {
		wg.Add(1)
		go call("partition "+p, func(ctx context.Context) error {
			return c.o.Participants.EndPartition(ctx, p, id, action, low)
		})
	}
	for _, s := range subs {
		wg.Add(1)
		go call("subscription "+s.Topic+" "+s.Name, func(ctx context.Context) error {
			return c.o.Participants.EndSubscription(ctx, s, id, action, low)
		})
	}
	wg.Wait()
}

// retry runs f until it succeeds, fails for good, or the coordinator stops.
func (c *Coordinator) retry(id ID, what string, f func(ctx context.Context) error) {
	timeout := time.Duration(c.o.Config.BufferClientOperationTimeoutInMills) * time.Millisecond
	if timeout <= 0 {
		timeout = 3 * time.Second
	}
	wait := retryFirst
	for attempt := 1; ; attempt++ {
		if c.o.Limit != nil {
			select {
			case c.o.Limit <- struct{}{}:
			case <-c.ctx.Done():
				return
			}
		}
		ctx, cancel := context.WithTimeout(c.ctx, timeout)
		err := f(ctx)
		cancel()
		if c.o.Limit != nil {
			<-c.o.Limit
		}
		if err == nil {
			return
		}
		if c.ctx.Err() != nil {
			return
		}
		if gone(err) {
			c.lg.Info("participant is gone; nothing to end there", "txn", id, "participant", what, "err", err)
			return
		}
		if _, retriable := wire.ServerErrorFor(err); !retriable {
			c.lg.Error("participant refused the end of a transaction; giving up on it", "txn", id, "participant", what, "err", err)
			return
		}
		if attempt == 1 || attempt%20 == 0 {
			c.lg.Warn("ending a transaction on a participant failed; retrying", "txn", id, "participant", what, "attempt", attempt, "err", err)
		}
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-c.ctx.Done():
			t.Stop()
			return
		}
		wait = min(2*wait, retryMax)
	}
}

// gone reports a participant that no longer exists (deleted topic or subscription): there
// is nothing left to end there.
func gone(err error) bool {
	return errors.Is(err, wire.ErrTopicNotFound) || errors.Is(err, wire.ErrSubscriptionNotFound)
}

// finishLocked forgets m (ending it again is ErrNotFound), answers its waiters and logs
// the final status.
func (c *Coordinator) finishLocked(m *txnMeta, action Action) {
	delete(c.txns, m.least)
	switch {
	case m.timedOut:
		c.stats.timedOut++
		c.stats.aborted++
	case action == Commit:
		c.stats.committed++
	default:
		c.stats.aborted++
	}
	c.stats.observeLatency(c.now().Sub(m.opened))
	if m.done != nil {
		select {
		case <-m.done:
		default:
			close(m.done)
		}
	}
	records := m.records
	go c.logFinal(m.least, action, records)
}

// logFinal appends the final status of a forgotten transaction and, once it is durable,
// acknowledges all its records.
func (c *Coordinator) logFinal(least uint64, action Action, records []recPos) {
	c.appendMu.Lock()
	defer c.appendMu.Unlock()
	if c.Err() != nil {
		return
	}
	err := c.log.append(encodeRecord(&record{kind: recStatus, least: least, status: action.final()}), func(p recPos, err error) {
		c.mu.Lock()
		defer c.mu.Unlock()
		c.stats.appends++
		if err != nil {
			c.failLocked(err)
			return
		}
		c.dropLocked(append(records, p))
	})
	if err != nil {
		c.mu.Lock()
		c.failLocked(err)
		c.mu.Unlock()
	}
}

// dropLocked acknowledges records of ended transactions, after making sure the log cursor
// remembers the highest sequence handed out (a replay that finds no record of it must not
// hand it out again).
func (c *Coordinator) dropLocked(records []recPos) {
	if c.propSeq < c.durSeq {
		if err := c.log.setProps(map[string]int64{seqProp: int64(c.durSeq)}); err != nil {
			c.lg.Warn("recording the sequence in the coordinator log failed; its records stay", "err", err)
			return
		}
		c.propSeq = c.durSeq
	}
	if err := c.log.drop(records...); err != nil {
		c.lg.Warn("acknowledging ended transaction records failed; they are replayed and dropped again", "err", err)
	}
}

// ---- timeouts ----

// deadlines is a min-heap of open transactions by timeout.
type deadlines []*txnMeta

func (d deadlines) Len() int           { return len(d) }
func (d deadlines) Less(i, j int) bool { return d[i].timeoutAt.Before(d[j].timeoutAt) }
func (d deadlines) Swap(i, j int) {
	d[i], d[j] = d[j], d[i]
	d[i].heapIdx, d[j].heapIdx = i, j
}
func (d *deadlines) Push(x any) {
	m := x.(*txnMeta)
	m.heapIdx = len(*d)
	*d = append(*d, m)
}
func (d *deadlines) Pop() any {
	old := *d
	m := old[len(old)-1]
	old[len(old)-1] = nil
	m.heapIdx = -1
	*d = old[:len(old)-1]
	return m
}

// scheduleLocked arms m's timeout.
func (c *Coordinator) scheduleLocked(m *txnMeta) {
	if m.heapIdx >= 0 {
		return
	}
	heap.Push(&c.deadline, m)
	if m.heapIdx == 0 {
		c.armLocked()
	}
}

// unscheduleLocked disarms m's timeout.
func (c *Coordinator) unscheduleLocked(m *txnMeta) {
	if m.heapIdx < 0 {
		return
	}
	heap.Remove(&c.deadline, m.heapIdx)
}

// armLocked sets the timer to the earliest timeout.
func (c *Coordinator) armLocked() {
	if c.failed != nil || c.closed || len(c.deadline) == 0 {
		return
	}
	// Not sooner than a few milliseconds: an abort refused for a full log is retried then.
	d := max(c.deadline[0].timeoutAt.Sub(c.now()), 5*time.Millisecond)
	if c.timer == nil {
		c.timer = c.clock.AfterFunc(d, c.expire)
		return
	}
	c.timer.Reset(d)
}

// expire aborts every open transaction whose timeout passed.
func (c *Coordinator) expire() {
	c.mu.Lock()
	var due []uint64
	now := c.now()
	for len(c.deadline) > 0 && !c.deadline[0].timeoutAt.After(now) {
		m := heap.Pop(&c.deadline).(*txnMeta)
		due = append(due, m.least)
	}
	c.armLocked()
	c.mu.Unlock()
	for _, least := range due {
		if _, err := c.startEnd(ID{c.id, least}, Abort, true); err != nil && c.Err() == nil {
			c.lg.Warn("aborting a timed-out transaction failed", "txn", ID{c.id, least}, "err", err)
		}
	}
}
