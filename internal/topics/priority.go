package topics

import "math"

// Shared consumer priority levels (SUBSCRIBE priority_level): a lower number is served
// first. The dispatcher picks, round-robin, among the consumers of the best level that can
// receive now; a consumer of a worse level gets messages only while every better one is out
// of permits or at its unacknowledged limit.

// pickSharedLocked chooses the Shared consumer for the next entry, or nil.
func (s *Subscription) pickSharedLocked() *Consumer {
	n := len(s.consumers)
	best := int32(math.MaxInt32)
	found := false
	for _, cs := range s.consumers {
		if cs.priority <= best && s.canReceiveLocked(cs) {
			best, found = cs.priority, true
		}
	}
	if !found {
		return nil
	}
	for i := 0; i < n; i++ {
		cs := s.consumers[(s.rr+i)%n]
		if cs.priority == best && s.canReceiveLocked(cs) {
			s.rr = (s.rr + i + 1) % n
			return cs
		}
	}
	return nil
}
