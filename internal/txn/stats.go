package txn

import "time"

// latencyBucketsMs are Pulsar's pulsar_txn_execution_latency_le_* bounds: how long
// transactions took from open to end, in milliseconds; the last bucket is everything above.
var latencyBucketsMs = []int64{10, 20, 50, 100, 500, 1000, 5000, 15000, 30000, 60000, 300000, 1500000, 3000000}

// coordStats are a coordinator's counters (pulsar_txn_* and the admin coordinatorStats).
type coordStats struct {
	created, committed, aborted, timedOut, appends int64
	latency                                        [14]int64
	recoverStart, recoverEnd                       time.Time
}

func (s *coordStats) observeLatency(d time.Duration) {
	ms := d.Milliseconds()
	for i, b := range latencyBucketsMs {
		if ms <= b {
			s.latency[i]++
			return
		}
	}
	s.latency[len(latencyBucketsMs)]++
}

// CoordinatorStats is a coordinator's state for the admin API and the metrics.
type CoordinatorStats struct {
	ID uint64
	// State is "Ready" while it serves, else why not.
	State string
	// Sequence is the highest sequence handed out (Pulsar's leastSigBits); LowWaterMark the
	// highest at or below which every transaction ended.
	Sequence, LowWaterMark uint64
	// Active counts open and ending transactions.
	Active int64
	// Created, Committed, Aborted (including timed out), TimedOut and Appends (log records
	// written) count since this coordinator was opened here.
	Created, Committed, Aborted, TimedOut, Appends int64
	// Latency counts ended transactions by how long they took, per latencyBucketsMs (the
	// last one is everything above).
	Latency                      [14]int64
	RecoverStarted, RecoverEnded time.Time
}

// LatencyBucketsMs are the upper bounds of CoordinatorStats.Latency, in milliseconds.
func LatencyBucketsMs() []int64 { return append([]int64(nil), latencyBucketsMs...) }

// Stats returns the coordinator's counters.
func (c *Coordinator) Stats() CoordinatorStats {
	c.mu.Lock()
	defer c.mu.Unlock()
	state := "Ready"
	if err := c.usableLocked(); err != nil {
		state = "None"
	}
	return CoordinatorStats{
		ID: c.id, State: state, Sequence: c.seq, LowWaterMark: c.lowWaterMarkLocked(),
		Active: int64(len(c.txns)), Created: c.stats.created, Committed: c.stats.committed,
		Aborted: c.stats.aborted, TimedOut: c.stats.timedOut, Appends: c.stats.appends,
		Latency: c.stats.latency, RecoverStarted: c.stats.recoverStart, RecoverEnded: c.stats.recoverEnd,
	}
}
