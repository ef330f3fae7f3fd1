package topics

import (
	"context"
	"time"
)

// compactionMonitor compacts loaded topics whose compaction backlog exceeds their
// compactionThreshold (topic policy, else namespace policy, else
// brokerServiceCompactionThresholdInBytes), every
// brokerServiceCompactionMonitorIntervalInSeconds, as Pulsar's broker does.
func (pm *policyManager) compactionMonitor(ctx context.Context) {
	defer pm.wg.Done()
	tick := time.NewTicker(time.Duration(pm.s.cfg.Policies.BrokerServiceCompactionMonitorIntervalInSeconds) * time.Second)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		for _, t := range pm.s.LoadedTopics() {
			if t.log != nil {
				t.checkCompaction()
			}
		}
	}
}

// checkCompaction starts a compaction if the topic's backlog for it is over its threshold:
// the bytes after the __compaction cursor's mark-delete position, or, before the first
// compaction, the topic's size (Pulsar's estimate without that cursor).
func (t *Topic) checkCompaction() {
	threshold := t.pol.get().compactionThreshold
	if threshold <= 0 {
		return
	}
	t.cmp.mu.Lock()
	busy := t.cmp.running || t.cmp.closed
	t.cmp.mu.Unlock()
	if busy {
		return
	}
	backlog := t.log.ml.TotalSize()
	if cur, ok := t.log.ml.Cursor(compactionCursorName); ok {
		backlog = cur.BacklogSize()
	}
	if backlog <= threshold {
		return
	}
	if err := t.startCompaction(); err == nil {
		t.logg.Info("compaction started by the threshold", "backlog_bytes", backlog, "threshold_bytes", threshold)
	}
}
