package broker

import (
	"errors"

	"github.com/magnetar-io/magnetar/internal/managedledger"
	"github.com/magnetar-io/magnetar/internal/wire/pb"
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
func (s *subscription) ackBatchIndexes(ids []*pb.MessageIdData) error {
	if len(ids) == 0 || !s.t.s.cfg.Delivery.AcknowledgmentAtBatchIndexLevelEnabled {
		return nil
	}
	var errs []error
	for _, id := range ids {
		p := position{int64(id.GetLedgerId()), int64(id.GetEntryId())}
		bits := make([]uint64, len(id.GetAckSet()))
		for i, w := range id.GetAckSet() {
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
func (s *subscription) ackSetFor(p position, count int) []int64 {
	if count <= 1 || s.cursor == nil || !s.t.s.cfg.Delivery.AcknowledgmentAtBatchIndexLevelEnabled {
		return nil
	}
	bits := s.cursor.batchAckSet(p)
	if bits == nil {
		return nil
	}
	out := make([]int64, len(bits))
	for i, w := range bits {
		out[i] = int64(w)
	}
	return out
}

func (c mlCursor) ackBatch(p position, remaining []uint64) (bool, error) {
	done, err := c.c.AckBatchIndexes(managedledger.Position{LedgerID: p.ledger, EntryID: p.entry}, remaining)
	return done, mlErr(err)
}

func (c mlCursor) batchAckSet(p position) []uint64 { return c.c.BatchAckSet(toML(p)) }
