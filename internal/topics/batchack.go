package topics

import (
	"errors"
)

// Batch-index acknowledgement (acknowledgmentAtBatchIndexLevelEnabled). A client with
// EnableBatchIndexAcknowledgment acknowledges single members of a batch entry with an
// ack_set whose set bits are the members it has not acknowledged. The cursor intersects
// these (managedledger/cursor_batch.go) and persists them; the entry stays pending at its
// consumer until no bit is left. Whenever a partly acknowledged entry is sent again
// (redelivery, restart), MESSAGE carries the remaining bits as ack_set and the client
// skips the members already acknowledged.

// ackBatchIndexes applies partial acknowledgements. An entry that becomes complete is no
// longer pending. With the feature off, partial acknowledgements are ignored (the whole
// batch is redelivered until every member is acknowledged, Pulsar's behaviour).
func (s *Subscription) ackBatchIndexes(ids []AckID) error {
	if len(ids) == 0 || !s.t.s.cfg.Delivery.AcknowledgmentAtBatchIndexLevelEnabled {
		return nil
	}
	var errs []error
	for _, id := range ids {
		p := id.Position
		bits := make([]uint64, len(id.AckSet))
		for i, w := range id.AckSet {
			bits[i] = uint64(w)
		}
		done, err := s.cursor.ackBatch(p, bits)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if done {
			s.mu.Lock()
			s.dropPendingLocked(p)
			delete(s.redeliveries, p)
			s.mu.Unlock()
		}
	}
	return errors.Join(errs...)
}

// ackSetFor is the ack_set to send with the entry at p holding count messages: nil unless
// it is a partly acknowledged batch.
func (s *Subscription) ackSetFor(p Position, count int) []int64 {
	if kept := s.compactedKeptLocked(p); kept != nil {
		return s.compactedAckSetLocked(p, kept) // compaction_read.go
	}
	if count <= 1 || s.cursor == nil || !s.t.s.cfg.Delivery.AcknowledgmentAtBatchIndexLevelEnabled {
		return nil
	}
	bits := s.txnMaskLocked(p, count, s.cursor.batchAckSet(p)) // txn.go
	if bits == nil {
		return nil
	}
	out := make([]int64, len(bits))
	for i, w := range bits {
		out[i] = int64(w)
	}
	return out
}

// ackBatch records a partial acknowledgement of a batch entry (remaining: a set bit per
// member still unacknowledged) and reports whether the entry is now fully acknowledged.
func (c *logCursor) ackBatch(p Position, remaining []uint64) (bool, error) {
	done, err := c.c.AckBatchIndexes(p, remaining)
	return done, mlErr(err)
}

// batchAckSet is the members of a partly acknowledged entry still unacknowledged, or nil.
func (c *logCursor) batchAckSet(p Position) []uint64 { return c.c.BatchAckSet(p) }
