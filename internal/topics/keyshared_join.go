package topics

// Key_Shared per-key order while consumers come and go, by two rules.
//
// Draining slots: an entry goes to its key's consumer only if no other consumer still has
// unacknowledged entries of the same hash slot (slotHolds counts them per slot). When keys
// move to another consumer (a join, or a leave, which releases the leaver's entries), the
// new owner waits until the old owner's earlier messages of those keys are acknowledged.
// This is the per-key form of the next rule (Pulsar 4's "draining hashes").
//
// Recently joined consumers (Pulsar's rule for AUTO_SPLIT without
// allow_out_of_order_delivery). A consumer joining takes over some keys from others, which
// may still hold unacknowledged messages of those keys. So the newcomer is limited to
// entries up to the highest position read when it joined (its join limit) until every
// entry up to that limit is acknowledged (the mark-delete position reaches it); later
// entries of its keys are held back meanwhile (keySharedDispatcher.replay), which keeps per-key order.

// noteReadLocked records the highest position the dispatcher has read.
func (s *Subscription) noteReadLocked(p Position) {
	if s.maxRead.Less(p) {
		s.maxRead = p
	}
}

// setJoinLimitLocked applies the rule to cs, joining now, if anything read so far may be
// unacknowledged.
func (s *Subscription) setJoinLimitLocked(cs *Consumer, meta *KeySharedPolicy) {
	if meta.Mode != AutoSplit || meta.AllowOutOfOrder {
		return
	}
	if s.cursor == nil || len(s.consumers) == 0 || s.maxRead == Earliest {
		return
	}
	if md := s.cursor.markDeletePosition(); !md.Less(s.maxRead) {
		return // everything read is acknowledged
	}
	limit := s.maxRead
	cs.joinLimit = &limit
}

// restrictedLocked tells whether the entry at p must not go to cs yet. The limit is lifted
// for good once everything up to it is acknowledged.
func (s *Subscription) restrictedLocked(cs *Consumer, p Position) bool {
	if cs.joinLimit == nil || !cs.joinLimit.Less(p) {
		return false
	}
	if md := s.cursor.markDeletePosition(); !md.Less(*cs.joinLimit) {
		cs.joinLimit = nil
		return false
	}
	return true
}

// slotHold is the consumer holding unacknowledged entries of a slot, and how many.
type slotHold struct {
	c *Consumer
	n int
}

func (s *Subscription) holdSlotLocked(cs *Consumer, slot int) {
	if slot < 0 {
		return
	}
	if s.slotHolds == nil {
		s.slotHolds = map[int]*slotHold{}
	}
	h := s.slotHolds[slot]
	if h == nil {
		h = &slotHold{c: cs}
		s.slotHolds[slot] = h
	}
	h.n++
}

func (s *Subscription) releaseSlotLocked(slot int) {
	if h := s.slotHolds[slot]; slot >= 0 && h != nil {
		if h.n--; h.n <= 0 {
			delete(s.slotHolds, slot)
			s.slotFreed = true
		}
	}
}

// acked is called after an acknowledgement reached the cursor. Held-back Key_Shared
// entries may be waiting for exactly this (a slot that finished draining, or the
// mark-delete position a join limit waits for) while the dispatcher waits at the tail for
// new entries: wake it. Only then, so that a steady ack stream does not keep aborting reads.
func (s *Subscription) acked() {
	s.mu.Lock()
	defer s.mu.Unlock()
	ks, ok := s.d.(*keySharedDispatcher)
	if !ok || len(ks.replay) == 0 || s.cancelRead == nil {
		return
	}
	wake := s.slotFreed
	for _, cs := range s.consumers {
		wake = wake || cs.joinLimit != nil
	}
	if wake {
		s.slotFreed = false
		s.cancelRead()
	}
}

// keyBlockedLocked tells whether the Key_Shared entry at p (of slot) must wait instead of
// going to its consumer cs now.
func (s *Subscription) keyBlockedLocked(cs *Consumer, slot int, p Position) bool {
	if cs.outOfOrder {
		return false // the consumer asked for speed over per-key order
	}
	if h := s.slotHolds[slot]; h != nil && h.c != cs {
		return true
	}
	return s.restrictedLocked(cs, p)
}
