package topics

// How many entries a dispatcher reads at a time.
//
// Permits count messages, but the log is read in entries, and a batched entry holds many
// messages. Reading as many entries as there are permits read up to 44x too much with 1 KiB
// messages in batches of 44: the dispatcher sent what the permits allowed, sought the cursor
// back to the first entry it could not send, and read the rest again. In a catch-up drain
// that second read missed every cache (the managed ledger keeps nothing for a backlogged
// cursor, and the bookie's read-ahead hands entries over once), so the bookie read each
// 4 MiB span again for half of it: 4.6x the backlog's bytes. Pulsar's dispatchers divide
// the permits by the consumers' average messages per entry; so do we, per subscription.

// avgPerEntryWeight is the weight of the newest entry in the moving average.
const avgPerEntryWeight = 0.125

// entriesToReadLocked is the next read's size: the permits in entries, at least one and at
// most the dispatcher's read batch. Caller holds s.mu.
func (s *Subscription) entriesToReadLocked() int {
	avg := max(s.avgPerEntry, 1)
	n := int(float64(s.permitsLocked()) / avg)
	return min(s.t.s.dyn.maxReadBatch(), max(n, 1))
}

// noteEntrySizeLocked folds the message count of an entry just dispatched into the average.
// Caller holds s.mu.
func (s *Subscription) noteEntrySizeLocked(count int) {
	if s.avgPerEntry == 0 {
		s.avgPerEntry = float64(count)
		return
	}
	s.avgPerEntry += (float64(count) - s.avgPerEntry) * avgPerEntryWeight
}
